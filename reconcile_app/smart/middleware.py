"""Living inside an EHR's iframe: CSP frame-ancestors from the EHR registrations, and cookies that a
browser blocking third-party cookies still keeps (CHIPS: SameSite=None; Secure; Partitioned)."""
from __future__ import annotations

import time
from collections.abc import Callable
from http.cookies import Morsel

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from .selectors import registration_frame_ancestors


_CACHE_SECONDS = 30.0
_cache: tuple[float, list[str]] = (0.0, [])


def frame_ancestors() -> list[str]:
    """Origins allowed to frame the app: the registered EHRs (plus ourselves).

    Cached briefly per process: every response needs it, registrations change rarely.
    """
    global _cache
    now = time.monotonic()
    if now - _cache[0] > _CACHE_SECONDS or not _cache[0]:
        _cache = (now, ["'self'", *registration_frame_ancestors()])
    return _cache[1]


def frame_ancestors_forget() -> None:
    """A registration changed: this process reads the list again on its next response (others within
    the cache's 30 s), so a new EHR can frame the app at once from where it was registered."""
    global _cache
    _cache = (0.0, [])


class FrameAncestorsMiddleware:
    """CSP frame-ancestors from the EHR registrations replaces the blunt X-Frame-Options."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            ancestors = " ".join(frame_ancestors())
            response["Content-Security-Policy"] = (
                "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                f"script-src 'self'; frame-ancestors {ancestors}"
            )
        if "X-Frame-Options" in response:
            del response["X-Frame-Options"]
        return response


class PartitionedMorsel(Morsel):
    """A cookie with the `Partitioned` attribute (CHIPS), which http.cookies learns only in Python 3.14."""

    def OutputString(self, attrs: list[str] | None = None) -> str:  # noqa: N802 - Morsel's own name
        return super().OutputString(attrs) + "; Partitioned"


LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "[::1]"}


def _secure_context(request: HttpRequest) -> bool:
    """HTTPS, or a loopback host, which browsers treat as secure (Secure cookies are kept there)."""
    if request.is_secure():
        return True
    host = request.get_host().rsplit(":", 1)[0] if not request.get_host().endswith("]") else request.get_host()
    return host.lower() in LOOPBACK_HOSTS


class PartitionedCookiesMiddleware:
    """An EHR frames the app from another site, so every cookie the app sets there (session, CSRF,
    messages) is third-party. Browsers that block third-party cookies (Chromium now does) drop them,
    and the SMART callback no longer finds its state ("Sign-in response refused"). Partitioned cookies
    (CHIPS) are kept per top-level site: the EHR's frame gets its own jar, first-party use is unchanged.

    They must be SameSite=None and Secure, so this applies on secure contexts only (HTTPS, or a
    loopback host in the demo); elsewhere cookies keep the settings' SameSite. FRAMED_COOKIES=False
    turns it off."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not getattr(settings, "FRAMED_COOKIES", False) or not response.cookies or not _secure_context(request):
            return response
        for name, morsel in list(response.cookies.items()):
            framed = PartitionedMorsel()
            framed.update(morsel)
            framed.set(morsel.key, morsel.value, morsel.coded_value)
            framed["samesite"] = "None"
            framed["secure"] = True
            dict.__setitem__(response.cookies, name, framed)
        return response


SESSION_LAUNCH_KEY = "smart_launch_id"
SESSION_PATIENT_KEY = "smart_patient_pk"


class LaunchBoundAccessMiddleware:
    """A clinician's access to a patient lasts as long as the SMART launch that granted it: when the
    launch has ended (expired, superseded by a launch for another patient, logged out at the EHR,
    refresh refused) the launch is dropped from the session; a clinician-only account is signed
    out and sees "your EHR session has ended" (401). Nurses and admins keep their own access and
    only lose the launched-patient context. SMART, sandbox, API and sign-in paths stay reachable so
    a new launch can start from the same browser."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        session = getattr(request, "session", None)
        user = getattr(request, "user", None)
        if session is None or user is None or not user.is_authenticated:
            return self.get_response(request)
        # The patient of a session is only ever set from its live launch (fhir's launch_open), so the
        # launch id in the session is what access hangs on.
        if SESSION_LAUNCH_KEY not in session:
            return self.get_response(request)
        from reconcile_app.core.exceptions import RetryableError

        from .selectors import launch_for_session
        from .services import launch_access_check

        launch = launch_for_session(launch_id=session.get(SESSION_LAUNCH_KEY), user=user)
        try:
            reason = launch_access_check(launch=launch)
        except RetryableError:
            if self._exempt(request):
                return self.get_response(request)
            from .views import launch_error_page

            return launch_error_page(request, code="ehr_unavailable", status=503)
        if not reason:
            return self.get_response(request)
        return self._ended(request, launch_id=launch.pk if launch else None, reason=reason)

    def _ended(self, request: HttpRequest, *, launch_id: int | None, reason: str) -> HttpResponse:
        from django.contrib.auth import logout

        from reconcile_app.audit.services import audit_record
        from reconcile_app.core.roles import Role, user_roles

        staff = bool(user_roles(request.user) & {Role.NURSE, Role.ADMIN})
        audit_record(request=request, action="smart.launch.ended", object_type="SmartLaunch", object_id=launch_id or "",
                     details={"reason": reason[:60], "signed_out": not staff})
        if staff:
            request.session.pop(SESSION_LAUNCH_KEY, None)
            request.session.pop(SESSION_PATIENT_KEY, None)
        else:
            logout(request)
        if staff or self._exempt(request):
            return self.get_response(request)
        from .views import launch_error_page

        return launch_error_page(request, code="expired", status=401)

    @staticmethod
    def _exempt(request: HttpRequest) -> bool:
        from django.urls import Resolver404, resolve

        try:
            match = resolve(request.path_info)
        except Resolver404:
            return True
        return match.namespace in ("smart", "sandbox", "api", "cds") or match.view_name in ("core:login", "core:healthz", "core:logout")
