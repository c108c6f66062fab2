"""Revocation propagates breadth-first over provenance: memories (and corrections of them), their open
findings and queue items; reviewed findings are kept and marked; write-backs are retracted or cancelled;
an earlier state the revoked memory had outdated is believed again; a crash part-way changes nothing."""
from __future__ import annotations

from datetime import timedelta

import pytest
import responses

from reconcile_app.audit.models import AuditEvent
from reconcile_app.narrative.lifecycle import Transition
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.services import memory_correction_propose, memory_transition
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Session, Turn
from reconcile_app.transcripts.services import session_withdraw
from reconcile_app.triage.models import Retraction, TriageItem, TriageQuote, WriteBack
from reconcile_app.triage.services import triage_item_confirm, triage_items_route
from tests.triage.factories import BASE_TIME, finding_create, memory_create, patient_create, session_create
from tests.triage.test_writeback import BASE, CITED, _patient

pytestmark = pytest.mark.django_db
STOPPED = {"drug": "lisinopril", "action": "stopped"}


@pytest.fixture(autouse=True)
def _pipeline_receivers() -> None:
    from reconcile_app import pipeline  # noqa: F401  (its receiver hands a withdrawal to the ledger)


def _said(patient, *, days: int, **finding):  # type: ignore[no-untyped-def]
    session = session_create(patient=patient)
    Session.objects.filter(pk=session.pk).update(started_at=BASE_TIME + timedelta(days=days))
    session.refresh_from_db()
    memory = memory_create(session=session, attributes=STOPPED)
    f = finding_create(patient=patient, session=session, memory=memory, **finding)
    (item,) = triage_items_route(findings=[f])
    return f, item


def test_withdrawing_one_of_two_quoting_sessions_keeps_the_item_open_with_the_other(admin_user) -> None:  # type: ignore[no-untyped-def]
    patient = patient_create()
    first, item = _said(patient, days=0, severity="high")
    second, _ = _said(patient, days=7, severity="low", safety_critical=False)
    session_withdraw(session_id=first.session_id, user=admin_user, reason="patient asked")
    item.refresh_from_db()
    assert (item.status, item.quote_count, item.severity, item.safety_critical) == ("new", 1, "low", False)
    quote = TriageQuote.objects.get(finding=first)
    assert (quote.closed_reason, quote.summary) == ("withdrawn", "")
    first.refresh_from_db()
    assert (first.status, first.explanation, first.memory.status) == ("revoked", "", "revoked")
    audit = AuditEvent.objects.get(action="ledger.revoke")
    assert (audit.details["memories"], audit.details["findings_revoked"], audit.details["items_recomputed"]) == (1, 1, 1)
    assert audit.actor == admin_user


@responses.activate
def test_a_reviewed_finding_is_kept_and_marked_and_its_write_back_retracted(nurse, admin_user, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    responses.post(f"{BASE}/DetectedIssue", status=201, json={"resourceType": "DetectedIssue", "id": "di-1"})
    responses.get(f"{BASE}/DetectedIssue/di-1", json={"resourceType": "DetectedIssue", "id": "di-1", "status": "final",
                                                      "patient": {"reference": "Patient/pat-a"}})
    responses.put(f"{BASE}/DetectedIssue/di-1", json={"resourceType": "DetectedIssue", "id": "di-1"})
    patient = _patient()
    finding = finding_create(patient=patient, citations=CITED)
    (item,) = triage_items_route(findings=[finding])
    with django_capture_on_commit_callbacks(execute=True):
        triage_item_confirm(item=item, user=nurse, note="called the patient")
    with django_capture_on_commit_callbacks(execute=True):
        session_withdraw(session_id=finding.session_id, user=admin_user)
    finding.refresh_from_db()
    item.refresh_from_db()
    assert (finding.status, finding.source_revoked_at is not None, finding.explanation != "") == ("current", True, True)
    assert (item.status, item.source_revoked_at is not None, item.summary) == ("confirmed", True, "")
    assert item.events.filter(action="source_withdrawn").exists() and item.events.filter(action="confirm").exists()
    retraction = Retraction.objects.get(writeback__item=item)
    assert (retraction.status, retraction.method) == ("done", "entered-in-error")
    assert WriteBack.objects.filter(item=item).exists()  # never cascade-deleted: it says where the copy went
    audit = AuditEvent.objects.get(action="ledger.revoke")
    assert (audit.details["findings_kept"], audit.details["items_marked"], audit.details["retractions"]) == (1, 1, 1)


def test_corrections_of_a_revoked_memory_are_revoked_too_breadth_first(nurse, admin_user, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("reconcile_app.narrative.services._correction_draft", lambda **kwargs: None)
    patient = patient_create()
    session = session_create(patient=patient)
    memory = memory_create(session=session)
    correction = memory_correction_propose(memory=memory, content="Stopped lisinopril a month ago", actor=nurse)
    untouched = memory_create(session=session_create(patient=patient), content="Walks daily", category="lifestyle", chain_key="")
    session_withdraw(session_id=session.pk, user=admin_user)
    statuses = dict(Memory.objects.values_list("pk", "status"))
    assert statuses == {memory.pk: "revoked", correction.pk: "revoked", untouched.pk: "current"}
    assert not Memory.objects.filter(pk__in=[memory.pk, correction.pk]).exclude(content="").exists()


def test_an_earlier_state_the_withdrawn_statement_had_outdated_is_believed_and_judged_again(admin_user) -> None:  # type: ignore[no-untyped-def]
    patient = patient_create()
    earlier_session = session_create(patient=patient)
    earlier = memory_create(session=earlier_session, content="Taking lisinopril every morning", attributes={"drug": "lisinopril", "action": "taking"})
    old_finding = finding_create(patient=patient, session=earlier_session, memory=earlier, kind="agreement", severity="low",
                                 safety_critical=False)
    later_session = session_create(patient=patient)
    Session.objects.filter(pk=later_session.pk).update(started_at=BASE_TIME + timedelta(days=7))
    later = memory_create(session=later_session, attributes=STOPPED, supersedes=earlier)
    memory_transition(memory=earlier, transition=Transition.SUPERSEDE, reason="a later state", related=later)
    Finding.objects.filter(pk=old_finding.pk).update(status="superseded")
    session_withdraw(session_id=later_session.pk, user=admin_user)
    earlier.refresh_from_db()
    assert earlier.status == "current" and earlier.events.last().action == "restore"
    again = Finding.objects.get(memory=earlier, status="current")
    assert again.run.purpose == "memory_change" and again.pk != old_finding.pk
    assert AuditEvent.objects.get(action="ledger.revoke").details["restored"] == 1


def test_a_crash_in_the_middle_of_a_propagation_leaves_the_previous_consistent_state(admin_user, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.ledger import services

    patient = patient_create()
    finding, item = _said(patient, days=0)
    before = (list(Memory.objects.values_list("pk", "status", "content")), list(Finding.objects.values_list("pk", "status", "explanation")),
              list(TriageItem.objects.values_list("pk", "status", "summary")), Turn.objects.count())

    def crash(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("power cut after the memories and findings were revoked")

    monkeypatch.setattr(services, "writebacks_withdraw", crash)
    with pytest.raises(RuntimeError):
        session_withdraw(session_id=finding.session_id, user=admin_user)
    after = (list(Memory.objects.values_list("pk", "status", "content")), list(Finding.objects.values_list("pk", "status", "explanation")),
             list(TriageItem.objects.values_list("pk", "status", "summary")), Turn.objects.count())
    assert after == before
    assert Session.objects.get(pk=finding.session_id).withdrawn_at is None
    assert not AuditEvent.objects.filter(action__in=("ledger.revoke", "transcript.withdraw")).exists()
    monkeypatch.undo()
    session_withdraw(session_id=finding.session_id, user=admin_user)  # done again, it completes
    item.refresh_from_db()
    assert item.status == "withdrawn"
