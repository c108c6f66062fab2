"""The sandbox's SMART authorization server: authorize (EHR launch or patient picker), token, JWKS."""
from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .forms import AuthorizeForm, TokenForm
from .models import SandboxClient, SimulatedError
from .scopes import invalid_scopes, scopes_not_allowed
from .selectors import sandbox_client_get, sandbox_patient_get, sandbox_patient_list, sandbox_practitioner_list
from .services import (
    Grant,
    OAuthError,
    sandbox_code_issue,
    sandbox_key_get,
    sandbox_launch_get,
    sandbox_token_for_client_credentials,
    sandbox_token_for_code,
    sandbox_token_refresh,
)
from .views_fhir import fhir_base_url


def _error_page(request: HttpRequest, message: str) -> HttpResponse:
    # Never redirect when the client or its redirect_uri cannot be trusted: that would be an open redirect.
    return render(request, "sandbox/authorize_error.html", {"message": message}, status=400)


def _redirect_error(redirect_uri: str, state: str, error: str, description: str) -> HttpResponseRedirect:
    params = {"error": error, "error_description": description}
    if state:
        params["state"] = state
    return HttpResponseRedirect(redirect_uri + ("&" if "?" in redirect_uri else "?") + urlencode(params))


def _authorize_request_error(request: HttpRequest, data: dict, client: SandboxClient, simulate: str) -> str:
    """The OAuth error (code) for a malformed request, or ''. The client and redirect_uri are already trusted."""
    requested = data["scope"].split()
    if data["response_type"] != "code":
        return "unsupported_response_type"
    if not data["code_challenge"] or data["code_challenge_method"] != "S256":
        return "invalid_request"
    if data["aud"].rstrip("/") != fhir_base_url(request).rstrip("/"):
        return "invalid_request"
    if simulate == SimulatedError.AUTH_INVALID_SCOPE or not requested or invalid_scopes(requested):
        return "invalid_scope"
    if scopes_not_allowed(requested, client.scopes):
        return "invalid_scope"
    return ""


_ERROR_TEXT = {
    "unsupported_response_type": "Only response_type=code is supported.",
    "invalid_request": "PKCE (S256) is required and aud must be this server's FHIR base URL.",
    "invalid_scope": "The requested scope is invalid or not allowed for this client.",
}


@never_cache
@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    form = AuthorizeForm(request.POST if request.method == "POST" else request.GET)
    form.is_valid()  # every field is optional; the checks below say what is wrong
    data = form.cleaned_data
    launch = sandbox_launch_get(token=data["launch"]) if data["launch"] else None
    simulate = launch.simulate_error if launch else ""
    client = sandbox_client_get(client_id=data["client_id"])
    if client is None or simulate == SimulatedError.AUTH_INVALID_CLIENT_ID:
        return _error_page(request, "Unknown client_id: this application is not registered with the sandbox EHR.")
    if data["redirect_uri"] not in client.redirect_uris or simulate == SimulatedError.AUTH_INVALID_REDIRECT_URI:
        return _error_page(request, "The redirect_uri is not registered for this client.")
    redirect_uri, state = data["redirect_uri"], data["state"]
    error = _authorize_request_error(request, data, client, simulate)
    if error:
        return _redirect_error(redirect_uri, state, error, _ERROR_TEXT[error])
    if data["launch"] and launch is None:
        return _redirect_error(redirect_uri, state, "invalid_request", "The launch token is unknown or expired.")
    if launch is not None:
        grant = Grant(
            client=client, scope=data["scope"], patient_id=launch.patient_id, practitioner_id=launch.practitioner_id,
            encounter_id=launch.encounter_id, need_patient_banner=launch.need_patient_banner, simulate_error=simulate,
        )
    else:
        # Standalone launch: the user picks the patient (and who they are) on the sandbox's own page.
        patient = sandbox_patient_get(fhir_id=data["patient"]) if request.method == "POST" and data["patient"] else None
        if patient is None:
            return render(request, "sandbox/authorize_picker.html", {
                "client": client, "params": {k: v for k, v in data.items() if k not in ("patient", "practitioner") and v},
                "patients": sandbox_patient_list(), "practitioners": sandbox_practitioner_list(),
            })
        grant = Grant(
            client=client, scope=data["scope"], patient_id=patient.fhir_id,
            practitioner_id=data["practitioner"], need_patient_banner=True,
        )
    code = sandbox_code_issue(grant=grant, redirect_uri=redirect_uri, code_challenge=data["code_challenge"], nonce=data["nonce"])
    query = {"code": code, **({"state": state} if state else {})}
    return HttpResponseRedirect(redirect_uri + ("&" if "?" in redirect_uri else "?") + urlencode(query))


def _token_json(body: dict, status: int = 200) -> JsonResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    return response


@csrf_exempt
@require_POST
def token(request: HttpRequest) -> JsonResponse:
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _token_json({"error": "invalid_request", "error_description": "grant_type is required."}, 400)
    data = form.cleaned_data
    base = fhir_base_url(request)
    token_url = request.build_absolute_uri(reverse("sandbox:token"))
    try:
        if data["grant_type"] == "authorization_code":
            body = sandbox_token_for_code(
                code=data["code"], client_id=data["client_id"], redirect_uri=data["redirect_uri"],
                code_verifier=data["code_verifier"], fhir_base=base, client_assertion=data["client_assertion"],
                token_url=token_url,
            )
        elif data["grant_type"] == "refresh_token":
            body = sandbox_token_refresh(
                refresh_token=data["refresh_token"], client_id=data["client_id"], fhir_base=base,
                client_assertion=data["client_assertion"], token_url=token_url,
            )
        elif data["grant_type"] == "client_credentials":
            body = sandbox_token_for_client_credentials(
                client_assertion_type=data["client_assertion_type"], client_assertion=data["client_assertion"],
                scope=data["scope"], token_url=token_url, fhir_base=base,
            )
        else:
            raise OAuthError("unsupported_grant_type", "Unsupported grant_type.")
    except OAuthError as exc:
        return _token_json({"error": exc.error, "error_description": exc.description}, exc.status)
    return _token_json(body)


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"keys": [sandbox_key_get().public_jwk]})
