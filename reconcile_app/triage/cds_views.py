"""CDS Hooks endpoints: discovery (GET /cds-services) and the patient-view service."""
from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.decorators import public
from reconcile_app.fhir.models import Patient

from .cds import SERVICE_ID, CdsAuthError, cds_client_verify, discovery, patient_view_cards


@public
@require_GET
def cds_discovery(request: HttpRequest) -> JsonResponse:
    return JsonResponse(discovery())


@public
@csrf_exempt  # machine-to-machine: authenticated by the CDS client's signed JWT, not a cookie
@require_POST
def cds_service(request: HttpRequest, service_id: str) -> JsonResponse:
    if service_id != SERVICE_ID:
        return JsonResponse({"error": "unknown service"}, status=404)
    audiences = [request.build_absolute_uri(), settings.PUBLIC_BASE_URL.rstrip("/") + request.path]
    try:
        registration = cds_client_verify(authorization=request.headers.get("Authorization", ""), audiences=audiences)
    except CdsAuthError as exc:
        audit_record(request=request, action="cds.patient_view", outcome="denied", details={"reason": exc.message[:120]})
        return JsonResponse({"error": "unauthorized"}, status=401)
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"error": "body is not JSON"}, status=400)
    context = body.get("context") if isinstance(body, dict) else None
    patient_id = context.get("patientId") if isinstance(context, dict) else None
    if body.get("hook") != "patient-view" or not isinstance(patient_id, str) or not patient_id:
        return JsonResponse({"error": "expected a patient-view hook with context.patientId"}, status=400)
    cards = patient_view_cards(patient_fhir_id=patient_id, registration=registration, fhir_server=str(body.get("fhirServer") or ""))
    patients = Patient.objects.filter(fhir_id=patient_id)
    if registration is not None:
        patients = patients.filter(registration=registration)
    audit_record(request=request, action="cds.patient_view", patient_pk=patients.values_list("pk", flat=True).first(),
                 object_type="patient_fhir", object_id=patient_id[:64],
                 details={"cards": len(cards), "registration": registration.pk if registration else None})
    return JsonResponse({"cards": cards})
