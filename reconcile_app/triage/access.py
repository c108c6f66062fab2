"""Fetch helpers that authorize: nurses and admins see every patient; a clinician only the launched one."""
from __future__ import annotations

from django.http import Http404, HttpRequest

from reconcile_app.core.decorators import deny
from reconcile_app.core.roles import Role, user_has_role

from .models import TriageItem, WriteBack

SESSION_PATIENT_KEY = "smart_patient_pk"


def launched_patient_pk(request: HttpRequest) -> int | None:
    value = request.session.get(SESSION_PATIENT_KEY)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def patient_allowed(request: HttpRequest, patient_pk: int) -> bool:
    if user_has_role(request.user, Role.NURSE, Role.ADMIN):
        return True
    return user_has_role(request.user, Role.CLINICIAN) and launched_patient_pk(request) == patient_pk


def triage_item_get_for_user(*, request: HttpRequest, finding_pk: int) -> TriageItem:
    """The item of a discrepancy finding, or 404 (unknown) / 403 (audited) for another patient."""
    item = TriageItem.objects.select_related("patient", "assignee").filter(finding_id=finding_pk).first()
    if item is None:
        raise Http404("no such finding")
    if not patient_allowed(request, item.patient_id):
        raise deny(request, reason="patient_not_in_context", patient_pk=item.patient_id)
    return item


def writeback_get_for_user(*, request: HttpRequest, finding_pk: int) -> WriteBack:
    item = triage_item_get_for_user(request=request, finding_pk=finding_pk)
    wb = WriteBack.objects.select_related("item").filter(item=item).first()
    if wb is None:
        raise Http404("no write-back for this finding")
    return wb
