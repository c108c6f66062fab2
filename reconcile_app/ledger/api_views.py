"""A patient's correction through the coaching platform API: POST /api/corrections with the platform's
token. It enters as needs review; the answer reveals nothing about other platforms' patients."""
from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import public
from reconcile_app.core.exceptions import PermanentError, ValidationFailed
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.services import memory_correction_propose
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.access import PatientNotFound, patient_get_for_platform
from reconcile_app.transcripts.models import CoachingPlatform
from reconcile_app.transcripts.selectors import platform_for_token

from .forms import PlatformCorrectionForm

NOT_FOUND = {"error": "no statement of a patient enrolled for this platform matches"}


def _platform(request: HttpRequest) -> CoachingPlatform | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return platform_for_token(token=token.strip()) if scheme.lower() == "bearer" else None


def _statement(*, platform: CoachingPlatform, data: dict) -> Memory | None:
    """The memory the platform names, among its own sessions of the patient only."""
    patient = patient_get_for_platform(platform=platform, patient_ref=data["patient_ref"])
    sessions = {"session__patient": patient, "session__upload__platform": platform}
    if data.get("request_id"):
        finding = Finding.objects.filter(pk=int(data["request_id"].split("-", 1)[1]), **sessions).select_related("memory").first()
        return finding.memory if finding else None
    candidates = (Memory.objects.filter(session__external_id=data["session_id"], origin=Memory.Origin.EXTRACTED, **sessions)
                  .exclude(status=Memory.Status.REVOKED).order_by("seq", "id"))
    # The turn the statement was anchored on first, then any turn it quotes (turn_ids: anchor first).
    return next((m for m in candidates if m.turn_ids[:1] == [data["turn_id"]]), None) or next(
        (m for m in candidates if data["turn_id"] in m.turn_ids), None)


@public  # no session login: the platform's bearer token is checked below
@csrf_exempt  # bearer-token API: no cookies, so no CSRF exposure
@require_POST
def correction_create(request: HttpRequest) -> JsonResponse:
    platform = _platform(request)
    if platform is None:
        audit_record(request=request, action="api.correction", outcome="denied", details={"reason": "bad_token"})
        response = JsonResponse({"error": "a valid platform token is required"}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="reconcile"'
        return response
    try:
        body = json.loads(request.body or b"null")
    except ValueError:
        return JsonResponse({"error": "the body is not JSON"}, status=400)
    form = PlatformCorrectionForm(body if isinstance(body, dict) else {})
    if not form.is_valid():
        return JsonResponse({"error": "invalid correction", "errors": {k: [str(m) for m in v] for k, v in form.errors.items()}}, status=422)
    try:
        memory = _statement(platform=platform, data=form.cleaned_data)
    except PatientNotFound:
        memory = None
    if memory is None:
        audit_record(request=request, action="api.correction", outcome="denied", details={"reason": "not_found", "platform": platform.pk})
        return JsonResponse(NOT_FOUND, status=404)
    try:
        correction = memory_correction_propose(
            memory=memory, content=form.cleaned_data["content"], subject=form.cleaned_data.get("subject") or "",
            assertion=form.cleaned_data.get("assertion") or "", origin=Memory.Origin.PATIENT_CORRECTION,
            actor_label=f"platform #{platform.pk}",
        )
    except (ValidationFailed, PermanentError) as exc:
        return JsonResponse({"error": exc.message}, status=422 if isinstance(exc, ValidationFailed) else 409)
    return JsonResponse({"correction": correction.pk, "status": correction.status, "corrects": memory.pk}, status=202)
