"""Fetch helpers that authorize through the fhir app's patient gate (nurses/admins: any patient;
a clinician: only the patient of the SMART launch bound to the session)."""
from __future__ import annotations

from django.http import Http404, HttpRequest

from reconcile_app.fhir.selectors import patient_get_for_user

from .models import TriageItem, WriteBack

SESSION_PATIENT_KEY = "smart_patient_pk"


def launched_patient_pk(request: HttpRequest) -> int | None:
    value = request.session.get(SESSION_PATIENT_KEY)
    return value if isinstance(value, int) else None


def triage_item_get_for_user(*, request: HttpRequest, finding_pk: int) -> TriageItem:
    """The item a discrepancy finding is a quote of, or 404 (unknown) / 403 (audited) for another patient."""
    item = TriageItem.objects.select_related("assignee").filter(quotes__finding_id=finding_pk).first()
    if item is None:
        raise Http404("no such finding")
    item.patient = patient_get_for_user(request=request, patient_pk=item.patient_id)
    return item


def writeback_get_for_user(*, request: HttpRequest, finding_pk: int) -> WriteBack:
    item = triage_item_get_for_user(request=request, finding_pk=finding_pk)
    wb = WriteBack.objects.select_related("item").filter(item=item).first()
    if wb is None:
        raise Http404("no write-back for this finding")
    return wb
