"""SMART pages: EHR launch, standalone launch, callback, launch-again, our JWKS, and EHR registrations (admin)."""
from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import role_required
from reconcile_app.core.exceptions import ReconcileError
from reconcile_app.core.roles import Role

from . import services
from .backend import registration_key_generate, registration_public_jwk
from .exceptions import EhrUnavailable, LaunchExpired, LaunchRefused, UnknownIssuer
from .forms import CallbackForm, LaunchForm, RegistrationForm, StandaloneForm
from .models import EhrRegistration
from .selectors import registration_list, registration_list_launchable

logger = logging.getLogger(__name__)

# Where a completed launch goes: a page of the clinical stream, which reads the launch from the session.
SMART_LANDING_URL_NAME = "fhir:launch_open"

# What the clinician reads for each failure: fixed texts, never the EHR's own words.
ERROR_TEXTS = {
    "unknown_iss": ("This EHR is not registered", "reconcile was opened by an EHR it does not know, so it did not contact it. Ask an administrator to register the EHR."),
    "invalid_launch_request": ("Incomplete launch", "The EHR opened reconcile without the launch details it needs."),
    "foreign_state": ("Sign-in response refused", "This sign-in response was not started from this browser. Open reconcile from the EHR again."),
    "replayed_state": ("Sign-in response already used", "This sign-in response was already used. Open reconcile from the EHR again."),
    "missing_state": ("Sign-in response refused", "The sign-in response is incomplete. Open reconcile from the EHR again."),
    "cookies_blocked": ("Your browser blocked reconcile's sign-in cookie", "The browser did not keep the cookie reconcile sets inside the EHR's window (third-party cookies are blocked), so the sign-in could not be checked. Open reconcile in a new window from the EHR, or allow cookies for this site."),
    "missing_code": ("Sign-in response refused", "The EHR did not send an authorization code."),
    "invalid_client": ("The EHR does not recognise reconcile", "The EHR refused reconcile's client id. An administrator must check the registration."),
    "unauthorized_client": ("The EHR does not recognise reconcile", "The EHR refused reconcile's client id. An administrator must check the registration."),
    "invalid_request": ("The EHR refused the launch", "The EHR refused the sign-in request (for example an unregistered redirect address)."),
    "invalid_scope": ("The EHR refused the requested access", "The EHR refused the data access reconcile asks for. An administrator must check the scopes."),
    "access_denied": ("Access was not granted", "Access to the record was declined at the EHR."),
    "invalid_grant": ("The EHR refused the sign-in", "The EHR refused the authorization (invalid or expired). Open reconcile from the EHR again."),
    "token_response_invalid": ("The EHR sent an unusable answer", "The EHR's token answer could not be used. Open reconcile from the EHR again."),
    "id_token_missing": ("The EHR did not identify you", "The EHR sent no identity for the signed-in user."),
    "id_token_invalid": ("The EHR's identity could not be verified", "The identity the EHR sent failed verification; reconcile did not sign you in."),
    "no_patient": ("No patient selected", "The EHR did not say which patient to open."),
    "ehr_unavailable": ("The EHR is not answering", "The EHR did not answer in time or could not be reached. Try again in a moment."),
    "ehr_protocol": ("The EHR sent an unexpected answer", "The EHR answered in a way reconcile cannot use. An administrator can check the registration."),
    "expired": ("Your EHR session has ended", "The EHR session behind this page has expired. Open reconcile from the EHR again to continue."),
}
DISCOVERY_FAILED = "Discovery failed: no SMART configuration could be read from that address."
DEFAULT_ERROR = ("The launch failed", "reconcile could not complete the launch. Open it from the EHR again.")


def _error_code(exc: Exception) -> str:
    if isinstance(exc, UnknownIssuer):
        return "unknown_iss"
    if isinstance(exc, LaunchRefused):
        return exc.code
    if isinstance(exc, LaunchExpired):
        return "expired"
    if isinstance(exc, EhrUnavailable):
        return "ehr_unavailable"
    return "ehr_protocol"


def launch_error_page(request: HttpRequest, *, code: str, status: int = 400) -> HttpResponse:
    title, text = ERROR_TEXTS.get(code, DEFAULT_ERROR)
    return render(request, "smart/launch_error.html", {"title": title, "text": text, "code": code}, status=status)


def _fail(request: HttpRequest, *, action: str, exc: Exception) -> HttpResponse:
    code = _error_code(exc)
    extra = getattr(exc, "extra", {}) or {}
    details: dict[str, Any] = {"code": code}
    for key in ("launch_id", "status", "reason"):
        if key in extra:
            details[key] = extra[key]
    outcome = "denied" if isinstance(exc, (UnknownIssuer, LaunchRefused)) else "error"
    audit_record(request=request, action=action, outcome=outcome, object_type="SmartLaunch",
                 object_id=extra.get("launch_id", ""), details=details)
    logger.info("SMART %s failed code=%s", action, code)
    return launch_error_page(request, code=code, status=503 if isinstance(exc, EhrUnavailable) else 400)


def _redirect_uri(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("smart:callback"))


@require_GET
def launch(request: HttpRequest) -> HttpResponse:
    """EHR launch: `iss` must be a registered EHR before anything is sent anywhere."""
    form = LaunchForm(request.GET)
    if not form.is_valid():
        return _fail(request, action="smart.launch", exc=LaunchRefused("bad launch", code="invalid_launch_request"))
    try:
        registration = services.launch_from_iss(iss=form.cleaned_data["iss"])
        smart_launch, authorize_url = services.launch_begin(
            registration=registration, launch_token=form.cleaned_data["launch"],
            redirect_uri=_redirect_uri(request), session=request.session,
        )
    except ReconcileError as exc:
        return _fail(request, action="smart.launch", exc=exc)
    audit_record(request=request, action="smart.launch", object_type="SmartLaunch", object_id=smart_launch.pk,
                 details={"kind": smart_launch.kind, "registration": registration.pk})
    return redirect(authorize_url)


@require_http_methods(["GET", "POST"])
def standalone(request: HttpRequest) -> HttpResponse:
    """Standalone launch: pick a registered EHR; its authorization server then asks for the patient."""
    form = StandaloneForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        registration = form.cleaned_data["registration"]
        try:
            smart_launch, authorize_url = services.launch_begin(
                registration=registration, launch_token=None, redirect_uri=_redirect_uri(request), session=request.session,
            )
        except ReconcileError as exc:
            return _fail(request, action="smart.launch", exc=exc)
        audit_record(request=request, action="smart.launch", object_type="SmartLaunch", object_id=smart_launch.pk,
                     details={"kind": smart_launch.kind, "registration": registration.pk})
        return redirect(authorize_url)
    return render(request, "smart/standalone.html", {"form": form, "registrations": registration_list_launchable()})


@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    """OAuth redirect: single-use state of this session, code exchange, sign-in, then the record opens."""
    form = CallbackForm(request.GET)
    if not form.is_valid():
        return _fail(request, action="smart.callback", exc=LaunchRefused("bad callback", code="missing_state"))
    data = form.cleaned_data
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        # The launch set a session cookie moments ago: none came back, so the browser refused it.
        return _fail(request, action="smart.callback", exc=LaunchRefused("no session cookie", code="cookies_blocked"))
    try:
        smart_launch = services.launch_complete(state=data["state"], code=data["code"], error=data["error"],
                                                session=request.session)
    except ReconcileError as exc:
        return _fail(request, action="smart.callback", exc=exc)
    login(request, smart_launch.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session["smart_launch_id"] = smart_launch.pk
    request.session.pop("smart_patient_pk", None)
    audit_record(request=request, action="smart.callback", object_type="SmartLaunch", object_id=smart_launch.pk,
                 details={"kind": smart_launch.kind})
    # The clinical stream (downstream of smart) reads the patient and starts the pull.
    return redirect(SMART_LANDING_URL_NAME)


@require_GET
def launch_again(request: HttpRequest) -> HttpResponse:
    return launch_error_page(request, code="expired", status=401)


@csrf_exempt  # server-to-server from the EHR, authenticated by the signed logout token
@require_POST
def backchannel_logout(request: HttpRequest) -> JsonResponse:
    """OpenID Connect Back-Channel Logout: the EHR posts a signed `logout_token` when a user signs out
    there; that user's launches end, and with them every browser session's access (middleware)."""
    token = request.POST.get("logout_token", "")
    try:
        ended = services.backchannel_logout(logout_token=token) if token else None
    except ReconcileError as exc:
        ended = None
        audit_record(request=request, action="smart.backchannel_logout", outcome="denied", details={"code": _error_code(exc)})
    if ended is None:
        response = JsonResponse({"error": "invalid_request"}, status=400)
    else:
        audit_record(request=request, action="smart.backchannel_logout", object_type="SmartLaunch", details={"ended": ended})
        response = JsonResponse({}, status=200)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    """Our public keys, for EHRs that fetch them from a JWKS URL instead of a registered JWK."""
    registrations = EhrRegistration.objects.filter(active=True).exclude(private_key_pem="")
    keys = [jwk for r in registrations if (jwk := registration_public_jwk(registration=r)) is not None]
    return JsonResponse({"keys": keys})


# --- EHR registrations (admin) --------------------------------------------------------------


@require_GET
@role_required(Role.ADMIN)
def registration_list_view(request: HttpRequest) -> HttpResponse:
    return render(request, "smart/registration_list.html", {"registrations": registration_list()})


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def registration_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    instance = get_object_or_404(EhrRegistration, pk=pk) if pk else None
    form = RegistrationForm(request.POST or None, instance=instance)
    if request.method == "POST" and form.is_valid():
        registration = services.registration_save(registration=form.save(commit=False))
        audit_record(request=request, action="smart.registration.save", object_type="EhrRegistration",
                     object_id=registration.pk, details={"created": instance is None})
        messages.success(request, "Registration saved.")
        return redirect("smart:registration_edit", pk=registration.pk)
    return render(request, "smart/registration_form.html", {
        "form": form, "registration": instance,
        "has_key": bool(instance and instance.private_key_pem),
        "callback_url": _redirect_uri(request),
        "launch_url": request.build_absolute_uri(reverse("smart:launch")),
        "jwks_url": request.build_absolute_uri(reverse("smart:jwks")),
    })


@require_POST
@role_required(Role.ADMIN)
def registration_keygen(request: HttpRequest, pk: int) -> HttpResponse:
    """Generate our key pair for private_key_jwt; the page shows the public JWK to register at the EHR."""
    registration = get_object_or_404(EhrRegistration, pk=pk)
    jwk = registration_key_generate(registration=registration)
    audit_record(request=request, action="smart.registration.keygen", object_type="EhrRegistration", object_id=pk,
                 details={"kid": jwk["kid"]})
    messages.success(request, "New key pair generated. Register this public key (JWK) with the EHR: " + json.dumps(jwk))
    return redirect("smart:registration_edit", pk=pk)


@require_POST
@role_required(Role.ADMIN)
def registration_discover(request: HttpRequest, pk: int) -> HttpResponse:
    registration = get_object_or_404(EhrRegistration, pk=pk)
    try:
        config = services.registration_discover(registration=registration)
    except ReconcileError as exc:
        audit_record(request=request, action="smart.registration.discover", outcome="error",
                     object_type="EhrRegistration", object_id=pk, details={"code": _error_code(exc)})
        # One message for every cause (refused address, no answer, not a SMART server): different
        # messages would let the form probe which hosts and ports exist behind it.
        messages.error(request, DISCOVERY_FAILED)
    else:
        audit_record(request=request, action="smart.registration.discover", object_type="EhrRegistration",
                     object_id=pk, details={"source": config.get("source", "")})
        messages.success(request, f"Discovery succeeded ({config.get('source')}); token endpoint on {urlsplit(config['token_endpoint']).netloc}.")
    return redirect("smart:registration_edit", pk=pk)
