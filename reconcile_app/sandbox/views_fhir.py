"""The sandbox's FHIR R4 API: discovery, CapabilityStatement, read, search by patient with paging, create,
update (with If-Match) and delete of what apps wrote."""
from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from .fhirdata import CREATABLE_TYPES, resource_patient_id
from .forms import FhirSearchForm
from .models import SandboxToken, SimulatedError
from .scopes import scope_permits
from .selectors import sandbox_access_token_get, sandbox_resource_get, sandbox_resource_search
from .services import sandbox_resource_create, sandbox_resource_delete, sandbox_resource_update

FHIR_JSON = "application/fhir+json"
READABLE_TYPES = (
    "Patient", "Practitioner", "Encounter", "Condition", "MedicationRequest", "MedicationStatement",
    "AllergyIntolerance", "Observation", "Procedure", "Immunization", "CarePlan", *CREATABLE_TYPES,
)
# Clinical updates (an order stopped, an allergy resolved) are the EHR's; apps update or delete only what they wrote.
UPDATABLE_TYPES = tuple(t for t in READABLE_TYPES if t not in ("Patient", "Practitioner"))
APPLIED_SEARCH_PARAMS = ("patient", "subject", "_id")
SMART_CAPABILITIES = [
    "launch-ehr", "launch-standalone", "client-public", "client-confidential-asymmetric",
    "context-ehr-patient", "context-standalone-patient", "permission-v2", "permission-v1",
    "sso-openid-connect", "context-banner", "permission-offline", "permission-patient", "permission-user",
]
SCOPES_SUPPORTED = [
    "openid", "fhirUser", "profile", "launch", "launch/patient", "offline_access", "online_access",
    "patient/*.rs", "patient/*.cruds", "user/*.rs", "user/*.cruds", "system/*.rs", "system/*.cruds",
    "patient/*.read", "user/*.read", "system/*.read",
]


def fhir_base_url(request: HttpRequest) -> str:
    """The sandbox's FHIR base (its `iss`), absolute, as this request reached it."""
    return request.build_absolute_uri(reverse("sandbox:fhir_base"))


def _fhir(body: dict[str, Any], status: int = 200, **headers: str) -> JsonResponse:
    response = JsonResponse(body, status=status, content_type=FHIR_JSON, json_dumps_params={"separators": (",", ":")})
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def operation_outcome(status: int, code: str, diagnostics: str, **headers: str) -> JsonResponse:
    body = {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": code, "diagnostics": diagnostics}],
    }
    return _fhir(body, status, **headers)


def fhir_methods(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Like require_http_methods, but the refusal is an OperationOutcome."""
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                return operation_outcome(405, "not-supported", f"{request.method} is not supported here.", Allow=", ".join(methods))
            return view(request, *args, **kwargs)
        return wrapper
    return decorator


def _unauthorized(description: str) -> JsonResponse:
    return operation_outcome(
        401, "login", description, WWW_Authenticate=f'Bearer error="invalid_token", error_description="{description}"'
    )


def _bearer(request: HttpRequest) -> SandboxToken | JsonResponse:
    """The caller's access token, or the 401 to send back."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return _unauthorized("A bearer token is required.")
    token = sandbox_access_token_get(token=value.strip())
    if token is None or token.simulate_error == SimulatedError.REQUEST_INVALID_TOKEN:
        return _unauthorized("The access token is invalid.")
    if token.expires_at <= timezone.now() or token.simulate_error == SimulatedError.REQUEST_EXPIRED_TOKEN:
        return _unauthorized("The access token has expired.")
    return token


def _compartment(token: SandboxToken, *, resource_type: str, perm: str) -> tuple[bool, str | None]:
    """Whether the token may do `perm` on the type, and the one patient it is confined to (None: any)."""
    allowed, context = scope_permits(token.scope, resource_type=resource_type, perm=perm)
    if not allowed:
        return False, None
    return True, (token.patient_id or "") if context == "patient" else None


@require_GET
def fhir_base(request: HttpRequest) -> HttpResponse:
    return capability_statement(request)


@require_GET
def smart_configuration(request: HttpRequest) -> JsonResponse:
    return JsonResponse({
        "issuer": fhir_base_url(request),
        "jwks_uri": request.build_absolute_uri(reverse("sandbox:jwks")),
        "authorization_endpoint": request.build_absolute_uri(reverse("sandbox:authorize")),
        "token_endpoint": request.build_absolute_uri(reverse("sandbox:token")),
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["private_key_jwt"],
        "token_endpoint_auth_signing_alg_values_supported": ["RS384", "ES384"],
        "code_challenge_methods_supported": ["S256"],
        "response_types_supported": ["code"],
        "scopes_supported": SCOPES_SUPPORTED,
        "capabilities": SMART_CAPABILITIES,
    })


@require_GET
def capability_statement(request: HttpRequest) -> JsonResponse:
    urls = [
        {"url": "authorize", "valueUri": request.build_absolute_uri(reverse("sandbox:authorize"))},
        {"url": "token", "valueUri": request.build_absolute_uri(reverse("sandbox:token"))},
    ]
    resources = []
    for resource_type in READABLE_TYPES:
        interactions = [{"code": "read"}, {"code": "search-type"}]
        if resource_type in UPDATABLE_TYPES:
            interactions.append({"code": "update"})
        if resource_type in CREATABLE_TYPES:
            interactions += [{"code": "create"}, {"code": "delete"}]
        params = [{"name": "patient", "type": "reference"}, {"name": "subject", "type": "reference"}]
        if resource_type == "Patient":
            params = [{"name": "_id", "type": "token"}]
        resources.append({"type": resource_type, "interaction": interactions, "searchParam": params})
    return _fhir({
        "resourceType": "CapabilityStatement",
        "status": "active",
        "date": "2026-01-01",
        "kind": "instance",
        "software": {"name": "reconcile sandbox EHR"},
        "implementation": {"description": "Sandbox EHR for demos and tests", "url": fhir_base_url(request)},
        "fhirVersion": "4.0.1",
        "format": ["json"],
        "rest": [{
            "mode": "server",
            "security": {
                "cors": False,
                "service": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/restful-security-service", "code": "SMART-on-FHIR"}]}],
                "extension": [{"url": "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris", "extension": urls}],
            },
            "resource": resources,
        }],
    })


def _etag(resource: dict[str, Any]) -> str:
    meta = resource.get("meta") if isinstance(resource.get("meta"), dict) else {}
    return f'W/"{meta.get("versionId") or 1}"'


@csrf_exempt
@fhir_methods("GET", "PUT", "DELETE")
def resource_read(request: HttpRequest, resource_type: str, fhir_id: str) -> HttpResponse:
    allowed_methods = ["GET", *(["PUT"] if resource_type in UPDATABLE_TYPES else []), *(["DELETE"] if resource_type in CREATABLE_TYPES else [])]
    if request.method not in allowed_methods:
        return operation_outcome(405, "not-supported", f"{request.method} is not supported for {resource_type}.",
                                 Allow=", ".join(allowed_methods))
    token = _bearer(request)
    if isinstance(token, JsonResponse):
        return token
    perm = {"GET": "r", "PUT": "u", "DELETE": "d"}[request.method or "GET"]
    allowed, patient_id = _compartment(token, resource_type=resource_type, perm=perm)
    if not allowed:
        verb = {"r": "reading", "u": "updating", "d": "deleting"}[perm]
        return operation_outcome(403, "forbidden", f"The token's scopes do not allow {verb} {resource_type}.")
    row = sandbox_resource_get(resource_type=resource_type, fhir_id=fhir_id)
    # Outside the token's patient looks exactly like absent: no probing other patients' ids.
    if row is None or (patient_id is not None and row.patient_id not in ("", patient_id)):
        return operation_outcome(404, "not-found", f"{resource_type}/{fhir_id} is not known.")
    if request.method == "PUT":
        return _update(request, row.json, resource_type=resource_type, fhir_id=fhir_id, confined_to=patient_id)
    if request.method == "DELETE":
        sandbox_resource_delete(resource_type=resource_type, fhir_id=fhir_id)
        return HttpResponse(status=204)
    return _fhir(row.json, ETag=_etag(row.json))


def _update(request: HttpRequest, current: dict[str, Any], *, resource_type: str, fhir_id: str, confined_to: str | None) -> HttpResponse:
    try:
        resource = json.loads(request.body or b"null")
    except ValueError:
        return operation_outcome(400, "structure", "The body is not JSON.")
    if not isinstance(resource, dict) or resource.get("resourceType") != resource_type or str(resource.get("id")) != fhir_id:
        return operation_outcome(400, "invalid", f"The body must be {resource_type}/{fhir_id}.")
    if confined_to is not None and resource_patient_id(resource) != confined_to:
        return operation_outcome(403, "forbidden", "The token may only write for its own patient.")
    wanted = request.headers.get("If-Match", "")
    if wanted and wanted != _etag(current):
        return operation_outcome(412, "conflict", "The resource changed since it was read (If-Match).")
    row = sandbox_resource_update(resource_type=resource_type, fhir_id=fhir_id, resource=resource)
    return _fhir(row.json, ETag=_etag(row.json))


def _page_url(request: HttpRequest, *, offset: int, count: int) -> str:
    # Links carry only the parameters the search applied, so a client can see any it ignored.
    query = QueryDict(mutable=True)
    for name in APPLIED_SEARCH_PARAMS:
        if request.GET.get(name):
            query[name] = request.GET[name]
    query["_count"] = str(count)
    query["_offset"] = str(offset)
    return request.build_absolute_uri(request.path) + "?" + query.urlencode()


def _search(request: HttpRequest, resource_type: str) -> HttpResponse:
    token = _bearer(request)
    if isinstance(token, JsonResponse):
        return token
    allowed, confined_to = _compartment(token, resource_type=resource_type, perm="s")
    if not allowed:
        return operation_outcome(403, "forbidden", f"The token's scopes do not allow searching {resource_type}.")
    form = FhirSearchForm(request.GET)
    if not form.is_valid():
        return operation_outcome(400, "invalid", "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    wanted = form.cleaned_data["patient_id"]
    if confined_to is not None and wanted is not None and wanted != confined_to:
        return operation_outcome(403, "forbidden", "The token is limited to another patient.")
    patient_id = confined_to if confined_to is not None else wanted
    rows = sandbox_resource_search(
        resource_type=resource_type, patient_id=patient_id, fhir_id=form.cleaned_data.get("_id") or None
    )
    count, offset = form.cleaned_data["count"], form.cleaned_data["offset"]
    total = rows.count()
    base = fhir_base_url(request)
    page = list(rows[offset:offset + count].values_list("json", flat=True)) if count else []
    links = [{"relation": "self", "url": _page_url(request, offset=offset, count=count)}]
    if count and offset + count < total:
        links.append({"relation": "next", "url": _page_url(request, offset=offset + count, count=count)})
    if count and offset > 0:
        links.append({"relation": "previous", "url": _page_url(request, offset=max(offset - count, 0), count=count)})
    return _fhir({
        "resourceType": "Bundle",
        "type": "searchset",
        "total": total,
        "link": links,
        "entry": [
            {"fullUrl": f"{base}/{r['resourceType']}/{r['id']}", "resource": r, "search": {"mode": "match"}}
            for r in page
        ],
    })


def _create(request: HttpRequest, resource_type: str) -> HttpResponse:
    token = _bearer(request)
    if isinstance(token, JsonResponse):
        return token
    if resource_type not in CREATABLE_TYPES:
        return operation_outcome(405, "not-supported", f"The sandbox does not accept new {resource_type} resources.")
    allowed, confined_to = _compartment(token, resource_type=resource_type, perm="c")
    if not allowed:
        return operation_outcome(403, "forbidden", f"The token's scopes do not allow creating {resource_type}.")
    try:
        resource = json.loads(request.body or b"null")
    except ValueError:
        return operation_outcome(400, "structure", "The body is not JSON.")
    if not isinstance(resource, dict) or resource.get("resourceType") != resource_type:
        return operation_outcome(400, "invalid", f"The body must be a {resource_type} resource.")
    if confined_to is not None and resource_patient_id(resource) != confined_to:
        return operation_outcome(403, "forbidden", "The token may only write for its own patient.")
    row = sandbox_resource_create(resource=resource)
    location = f"{fhir_base_url(request)}/{resource_type}/{row.fhir_id}/_history/1"
    return _fhir(row.json, 201, Location=location, ETag='W/"1"')


@csrf_exempt
@fhir_methods("GET", "POST")
def resource_type_endpoint(request: HttpRequest, resource_type: str) -> HttpResponse:
    if request.method == "POST":
        return _create(request, resource_type)
    return _search(request, resource_type)



def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return operation_outcome(404, "not-found", "No such FHIR endpoint in the sandbox.")
