"""Fetch helpers that authorize: admins see every upload; a clinician only the launched patient's; a
coaching platform only the patients it is enrolled for."""
from __future__ import annotations

from django.http import Http404, HttpRequest

from reconcile_app.core.decorators import deny
from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.roles import Role, user_roles
from reconcile_app.fhir.models import Patient

from .models import CoachingPlatform, PlatformEnrolment, Session, Upload
from .selectors import patient_match


class PatientNotFound(PermanentError):
    """No patient this platform is enrolled for matches the reference. Deliberately the same whether
    the patient does not exist or belongs to someone else: a platform learns nothing about others."""

    def __init__(self, patient_ref: str) -> None:
        super().__init__(f"patient: no patient enrolled for this platform matches {patient_ref[:60]!r}")
        self.patient_ref = patient_ref


def platform_enrolled_for(*, platform: CoachingPlatform, patient: Patient) -> bool:
    enrolments = PlatformEnrolment.objects.filter(platform=platform)
    if enrolments.filter(patient=patient).exists():
        return True
    systems = set(enrolments.exclude(organization_system="").values_list("organization_system", flat=True))
    return any(isinstance(i, dict) and i.get("system") in systems and i.get("value") for i in patient.identifiers or [])


def patient_get_for_platform(*, platform: CoachingPlatform, patient_ref: str) -> Patient:
    """The one gate between a coaching platform and a patient: `Patient/<id>` or `system|value`,
    matched to exactly one patient the platform is enrolled for (directly or through an
    organisation), else PatientNotFound, whatever the reason."""
    patient = patient_match(reference=patient_ref) if patient_ref else None
    if patient is None or not platform.active or not platform_enrolled_for(platform=platform, patient=patient):
        raise PatientNotFound(patient_ref)
    return patient


def launched_patient_pk(request: HttpRequest) -> int | None:
    value = request.session.get("smart_patient_pk")
    return int(value) if isinstance(value, int) else None


def upload_get_for_user(*, request: HttpRequest, pk: int) -> Upload:
    roles = user_roles(request.user)
    upload = Upload.objects.select_related("patient", "uploaded_by", "platform").defer("raw").filter(pk=pk).first()
    if Role.ADMIN in roles:
        if upload is None:
            raise Http404("No such upload")
        return upload
    if Role.CLINICIAN in roles and upload is not None and upload.patient_id is not None and upload.patient_id == launched_patient_pk(request):
        return upload
    # The same answer whether or not the upload exists.
    raise deny(request, reason="upload_not_in_launch", patient_pk=upload.patient_id if upload else None)


def session_get_for_user(*, request: HttpRequest, pk: int) -> Session:
    """Nurses read transcripts too: they review the findings that quote them."""
    roles = user_roles(request.user)
    session = Session.objects.select_related("patient", "upload").filter(pk=pk).first()
    if roles & {Role.ADMIN, Role.NURSE}:
        if session is None:
            raise Http404("No such session")
        return session
    if Role.CLINICIAN in roles and session is not None and session.patient_id == launched_patient_pk(request):
        return session
    raise deny(request, reason="session_not_in_launch", patient_pk=session.patient_id if session else None)
