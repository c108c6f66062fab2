"""GET /api/patients/<id>/context: the context pack for an enrolled coaching platform (bearer token)."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from reconcile_app.audit.services import audit_record
from reconcile_app.transcripts.access import PatientNotFound

from .access import patient_get_for_context, platform_from_request
from .forms import ContextPackForm
from .services import ServedPack, context_pack_serve

# Patient data: no shared cache may keep it, and a client must revalidate (cheaply, by ETag) before reuse.
CACHE_CONTROL = "private, no-cache"


def _unauthorized(request: HttpRequest) -> JsonResponse:
    audit_record(request=request, action="api.context", outcome="denied", details={"reason": "bad_token"})
    response = JsonResponse({"error": "a valid platform token is required"}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="reconcile"'
    return response


def _response(served: ServedPack) -> HttpResponse:
    if isinstance(served.body, dict):  # 422: the budget cannot hold the safety section
        return JsonResponse(served.body, status=served.status)
    if served.status == 304:
        response = HttpResponse(status=304)
    elif isinstance(served.body, str):
        response = HttpResponse(served.body, content_type="text/plain; charset=utf-8")
    else:  # the pack, serialized once per version
        response = HttpResponse(served.body, content_type="application/json")
    response["ETag"] = f'"{served.etag}"'
    response["Cache-Control"] = CACHE_CONTROL
    response["Vary"] = "Authorization"
    response["X-Context-Pack-Version"] = served.version
    return response


@require_GET
def patient_context(request: HttpRequest, patient_id: str) -> HttpResponse:
    platform = platform_from_request(request)
    if platform is None:
        return _unauthorized(request)
    form = ContextPackForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"error": "invalid parameters", "fields": {k: [str(m) for m in v] for k, v in form.errors.items()}},
                            status=400)
    try:
        patient = patient_get_for_context(request=request, platform=platform, patient_id=patient_id)
    except PatientNotFound:
        return JsonResponse({"error": "not found"}, status=404)
    served = context_pack_serve(request=request, platform=platform, patient=patient, fmt=form.cleaned_data["format"],
                                budget=form.cleaned_data["budget"], if_none_match=request.headers.get("If-None-Match", ""))
    return _response(served)
