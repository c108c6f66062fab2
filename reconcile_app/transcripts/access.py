"""Fetch helpers that authorize: admins see every upload; a clinician only the launched patient's."""
from __future__ import annotations

from django.http import Http404, HttpRequest

from reconcile_app.core.decorators import deny
from reconcile_app.core.roles import Role, user_roles

from .models import Session, Upload


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
