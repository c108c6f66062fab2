"""Fetch helpers that authorize a context-pack request: a live platform token, then a patient it is enrolled for."""
from __future__ import annotations

import re

from django.http import HttpRequest

from reconcile_app.audit.services import audit_record
from reconcile_app.fhir.models import Patient
from reconcile_app.transcripts.access import PatientNotFound, patient_get_for_platform
from reconcile_app.transcripts.models import CoachingPlatform
from reconcile_app.transcripts.selectors import platform_for_token

# A FHIR logical id (R4 `id` type); anything else cannot name a patient and gets the same 404 as a stranger.
FHIR_ID = re.compile(r"[A-Za-z0-9\-.]{1,64}")


def platform_from_request(request: HttpRequest) -> CoachingPlatform | None:
    """The active, unrevoked platform whose bearer token the request carries, else None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return platform_for_token(token=token.strip()) if scheme.lower() == "bearer" else None


def patient_get_for_context(*, request: HttpRequest, platform: CoachingPlatform, patient_id: str) -> Patient:
    """`Patient/<patient_id>` among the patients the platform is enrolled for (issue 12's gate), else PatientNotFound,
    the same whether the patient is unknown or someone else's; a refusal is audited against the platform."""
    try:
        if not FHIR_ID.fullmatch(patient_id):
            raise PatientNotFound(f"Patient/{patient_id[:64]}")
        return patient_get_for_platform(platform=platform, patient_ref=f"Patient/{patient_id}")
    except PatientNotFound:
        audit_record(request=request, action="api.context", outcome="denied", object_type="platform", object_id=platform.pk,
                     details={"reason": "patient_not_enrolled", "platform": platform.pk})
        raise
