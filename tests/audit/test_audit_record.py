"""The audit trail is append-only and refuses free text."""
from __future__ import annotations

import pytest

from reconcile_app.audit.models import AuditEvent
from reconcile_app.audit.services import audit_record

pytestmark = pytest.mark.django_db


def test_events_cannot_be_changed_or_deleted():
    event = audit_record(action="finding.view", patient_pk=3, object_type="finding", object_id=7)
    event.action = "other"
    with pytest.raises(RuntimeError):
        event.save()
    with pytest.raises(RuntimeError):
        event.delete()
    assert AuditEvent.objects.get().action == "finding.view"


def test_long_free_text_is_refused():
    with pytest.raises(ValueError, match="free text"):
        audit_record(action="x", details={"note": "patient said " + "a" * 200})


def test_system_events_have_no_actor():
    event = audit_record(action="pipeline.run")
    assert event.actor is None and event.actor_label == "system" and event.role == "system"
