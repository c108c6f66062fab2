"""Reads of the audit trail."""
from __future__ import annotations

from django.db.models import QuerySet

from .models import AuditEvent


def audit_event_list(*, patient_pk: int | None = None, action: str | None = None) -> QuerySet[AuditEvent]:
    qs = AuditEvent.objects.select_related("actor")
    if patient_pk is not None:
        qs = qs.filter(patient_pk=patient_pk)
    if action:
        qs = qs.filter(action=action)
    return qs
