"""Request id, login-by-default and the viewer's time zone."""
from __future__ import annotations

import secrets
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import resolve, Resolver404
from django.utils import timezone

from .request_context import request_id_var
from .timezones import zone_get

# URL names reachable without a login: sign-in, health, SMART launch endpoints, the sandbox
# EHR (its own OAuth protects it), CDS Hooks (its own auth) and the coaching-platform API.
PUBLIC_NAMESPACES = {"smart", "sandbox", "cds", "api"}
PUBLIC_URL_NAMES = {"core:login", "core:healthz"}


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-Id", "")
        # Accept a caller's id only if it looks like one; never echo arbitrary text.
        rid = incoming if incoming.isalnum() and len(incoming) <= 64 else secrets.token_hex(8)
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-Id"] = rid
        return response


class LoginRequiredMiddleware:
    """Everything needs a login except the public endpoints; the denial is audited."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated or self._is_public(request):
            return self.get_response(request)
        from reconcile_app.audit.services import audit_record

        audit_record(request=request, action="page.view", outcome="denied", details={"reason": "anonymous"})
        if request.headers.get("HX-Request"):
            return HttpResponse(status=401)
        return redirect(f"{settings.LOGIN_URL_PATH}?next={request.path}")

    @staticmethod
    def _is_public(request: HttpRequest) -> bool:
        if request.path.startswith(settings.STATIC_URL) or request.path == "/favicon.ico":
            return True
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return True  # let the 404 handler answer; it shows nothing
        if match.namespace in PUBLIC_NAMESPACES or match.view_name in PUBLIC_URL_NAMES:
            return True
        return bool(getattr(match.func, "public", False))


TZ_SESSION_KEY = "tz"  # {"name": "America/New_York", "source": "browser" | "ehr" | "user"}


class TimezoneMiddleware:
    """Activate the viewer's time zone for the request: their saved preference (chosen, or detected
    from the browser or the EHR launch), kept in the session so it costs one query per session.
    Without one, times show in settings.TIME_ZONE, with the zone named."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = self._chosen(request)
        zone = zone_get(chosen.get("name", ""))
        if zone is not None:
            timezone.activate(zone)
        request.tz_name = chosen.get("name", "") if zone is not None else settings.TIME_ZONE  # type: ignore[attr-defined]
        # The browser may correct a detected zone, never one the user chose.
        request.tz_auto = chosen.get("source", "") != "user"  # type: ignore[attr-defined]
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()

    @staticmethod
    def _chosen(request: HttpRequest) -> dict[str, str]:
        session = getattr(request, "session", None)
        if session is None:
            return {}
        chosen = session.get(TZ_SESSION_KEY)
        if isinstance(chosen, dict):
            return chosen
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return {}
        from .models import UserPreference

        row = UserPreference.objects.filter(user=user).values_list("time_zone", "time_zone_source").first()
        chosen = {"name": row[0], "source": row[1]} if row and row[0] else {"name": "", "source": ""}
        session[TZ_SESSION_KEY] = chosen
        return chosen
