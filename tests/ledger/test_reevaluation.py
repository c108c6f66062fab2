"""Re-evaluation when the EHR changes: stopping a medication in the sandbox EHR, then refreshing, closes
the matching contradiction automatically (audited); only findings whose resources changed are
re-evaluated; a record that changes back and forth does not close and reopen an item on every refresh."""
from __future__ import annotations

import pytest

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.services import record_pull
from reconcile_app.reconciliation.models import Finding, FindingEvent
from reconcile_app.sandbox.models import SandboxResource
from reconcile_app.sandbox.services import sandbox_medication_stop, sandbox_resource_update
from reconcile_app.triage.models import TriageItem

from .conftest import heard

pytestmark = pytest.mark.django_db(transaction=True)
STOPPED_METFORMIN = "I stopped taking my metformin last week, it upset my stomach."
PENICILLIN_OK = "I had amoxicillin for a tooth and it was fine, no rash or anything."


def _metformin_item(patient):  # type: ignore[no-untyped-def]
    return TriageItem.objects.get(patient=patient, concept_key__contains="metformin", kind="contradiction")


def _refresh(patient):  # type: ignore[no-untyped-def]
    pull = record_pull(patient=patient)  # Backend Services, as the scheduled refresh does
    assert pull.status == "ok", pull.error
    return pull


def test_stopping_the_medication_in_the_ehr_then_refreshing_resolves_the_contradiction_audited(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    heard(ehr_patient, STOPPED_METFORMIN, "Walked the dog twice this week.")
    item = _metformin_item(ehr_patient)
    assert item.status == "new"
    old = item.finding
    assert old.justification["resources"][0]["resourceType"] == "MedicationRequest"
    findings_before = Finding.objects.count()

    sandbox_medication_stop(fhir_id="smart-med-1")  # the clinician stops it in the EHR
    pull = _refresh(ehr_patient)
    assert pull.snapshot.version == 2

    item.refresh_from_db()
    old.refresh_from_db()
    assert item.status == "resolved" and item.resolved_at is not None
    event = item.events.get(action="resolved_by_ehr_update")
    assert event.actor is None and "resolved by EHR update" in event.note
    new = old.superseded_by
    assert (old.status, old.closed_reason, new.kind, new.snapshot_id) == ("superseded", "ehr_update", "agreement", pull.snapshot_id)
    assert new.justification["resources"][0]["versionId"] == "2"  # rests on the stopped order's new version
    assert AuditEvent.objects.filter(action="triage.resolved_by_ehr_update", object_id=str(item.finding_id)).exists()
    audit = AuditEvent.objects.get(action="ledger.reevaluate")
    assert (audit.details["touched"], audit.details["changed"], audit.details["resolved"]) == (1, 1, 1)
    # Only the touched finding was re-evaluated: one new finding, the walk's finding only re-pointed.
    assert Finding.objects.count() == findings_before + 1
    assert audit.details["checked"] >= 2


def test_a_refresh_that_changes_nothing_re_evaluates_nothing(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    heard(ehr_patient, STOPPED_METFORMIN)
    _refresh(ehr_patient)
    assert not AuditEvent.objects.filter(action="ledger.reevaluate").exists()
    assert _metformin_item(ehr_patient).status == "new"


def test_a_new_version_that_leaves_the_verdict_standing_is_only_rechecked(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    heard(ehr_patient, STOPPED_METFORMIN)
    item = _metformin_item(ehr_patient)
    order = SandboxResource.objects.get(fhir_id="smart-med-1").json
    sandbox_resource_update(resource_type="MedicationRequest", fhir_id="smart-med-1", resource={**order, "note": [{"text": "refilled"}]})
    pull = _refresh(ehr_patient)
    item.refresh_from_db()
    finding = item.finding
    finding.refresh_from_db()
    assert item.status == "new" and finding.status == "current" and finding.checked_snapshot_id == pull.snapshot_id
    recheck = FindingEvent.objects.get(finding=finding, action="rechecked")
    assert recheck.justification["resources"][0]["versionId"] == "2" and recheck.snapshot_id == pull.snapshot_id
    assert finding.justification["resources"][0]["versionId"] == ""  # what it was made against stays as it was


def test_a_record_changing_back_and_forth_does_not_close_and_reopen_on_every_refresh(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    heard(ehr_patient, STOPPED_METFORMIN)
    first = _metformin_item(ehr_patient)

    def order(status: str) -> None:
        current = SandboxResource.objects.get(fhir_id="smart-med-1").json
        sandbox_resource_update(resource_type="MedicationRequest", fhir_id="smart-med-1", resource={**current, "status": status})
        _refresh(ehr_patient)

    order("stopped")  # closes once, on its own
    first.refresh_from_db()
    assert first.status == "resolved"
    order("active")  # the contradiction is back: a new item (closed ones never reopen)
    second = TriageItem.objects.get(patient=ehr_patient, kind="contradiction", status="new")
    assert second.pk != first.pk
    order("stopped")  # within the window: held open for a person, not closed again
    second.refresh_from_db()
    assert second.status == "new" and second.events.filter(action="held_open").exists()
    order("active")  # ... and not duplicated either
    assert TriageItem.objects.filter(patient=ehr_patient, kind="contradiction").count() == 2
    second.refresh_from_db()
    assert second.status == "new"
    assert AuditEvent.objects.filter(action="triage.held_open").count() == 1


def test_a_crash_during_re_evaluation_leaves_the_previous_state(ehr_patient, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.ledger import services

    heard(ehr_patient, STOPPED_METFORMIN)
    item = _metformin_item(ehr_patient)
    findings = list(Finding.objects.values_list("pk", "status", "checked_snapshot_id"))

    def crash(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("worker killed mid-propagation")

    monkeypatch.setattr(services, "triage_items_route", crash)
    sandbox_medication_stop(fhir_id="smart-med-1")
    with pytest.raises(RuntimeError):
        _refresh(ehr_patient)
    item.refresh_from_db()
    assert item.status == "new"
    assert list(Finding.objects.values_list("pk", "status", "checked_snapshot_id")) == findings
    assert not FindingEvent.objects.exists() and not AuditEvent.objects.filter(action="ledger.reevaluate").exists()
    monkeypatch.undo()
    from reconcile_app.ledger.services import record_reevaluate

    record_reevaluate(patient_id=ehr_patient.pk)  # the retry finds the consistent state and completes
    item.refresh_from_db()
    assert item.status == "resolved"


def test_evaluation_results_read_the_pipelines_findings_not_a_later_re_evaluation(ehr_patient) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.evaluation.results import results_for_patient

    heard(ehr_patient, STOPPED_METFORMIN)
    before = [f["kind"] for f in results_for_patient(patient=ehr_patient)["findings"]]
    sandbox_medication_stop(fhir_id="smart-med-1")
    _refresh(ehr_patient)  # a re-evaluation run (agreement) now exists for the session
    assert Finding.objects.filter(run__purpose="reevaluation").exists()
    assert [f["kind"] for f in results_for_patient(patient=ehr_patient)["findings"]] == before == ["contradiction"]
