"""Import service: raw kept first, all-or-nothing, idempotent, matching and holding, consent withdrawal."""
from __future__ import annotations

import json

import pytest

from reconcile_app.audit.models import AuditEvent
from reconcile_app.core.exceptions import PermanentError
from reconcile_app.narrative.models import Memory
from reconcile_app.pipeline import pipeline_patient_drain
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Session, Turn, Upload
from reconcile_app.transcripts.services import (
    session_retry,
    session_withdraw,
    upload_import,
    upload_map,
    upload_receive,
    upload_withdraw,
)

from .conftest import transcript_bytes


def _import(raw: bytes, **kwargs) -> Upload:  # type: ignore[no-untyped-def]
    upload = upload_receive(raw=raw, filename=kwargs.pop("filename", "t.json"), source=Upload.Source.CLI, **kwargs)
    return upload_import(upload_id=upload.pk, start_pipeline=False)


def test_a_valid_upload_keeps_its_bytes_and_imports_every_session_and_turn(patient, admin_user):
    raw = transcript_bytes(sessions=2)
    upload = _import(raw, user=admin_user)
    assert upload.status == Upload.Status.IMPORTED
    assert bytes(upload.raw) == raw and upload.size == len(raw) and len(upload.sha256) == 64
    assert upload.uploaded_by == admin_user and upload.patient == patient
    assert upload.summary["added"] == ["s01", "s02"]
    assert Turn.objects.filter(session__patient=patient).count() == 4
    assert list(Session.objects.filter(patient=patient).values_list("pipeline_status", flat=True)) == ["pending", "pending"]
    assert set(AuditEvent.objects.filter(object_type="upload", object_id=str(upload.pk)).values_list("action", flat=True)) == {
        "transcript.upload", "transcript.import"}


def test_the_same_transcript_twice_changes_nothing(patient):
    _import(transcript_bytes(sessions=2))
    before = list(Turn.objects.values_list("id", "text"))
    second = _import(transcript_bytes(sessions=2))
    assert second.status == Upload.Status.IMPORTED
    assert second.summary["added"] == [] and second.summary["unchanged"] == ["s01", "s02"]
    assert list(Turn.objects.values_list("id", "text")) == before


def test_a_longer_export_appends_only_the_new_sessions(patient):
    _import(transcript_bytes(sessions=2))
    longer = _import(transcript_bytes(sessions=4))
    assert longer.summary["added"] == ["s03", "s04"]
    assert longer.summary["unchanged"] == ["s01", "s02"]
    assert Session.objects.filter(patient=patient).count() == 4
    assert Session.objects.get(external_id="s03").upload == longer


def test_a_known_session_with_different_content_is_reported_as_a_conflict_not_merged(patient):
    _import(transcript_bytes(sessions=2))
    changed = _import(transcript_bytes(sessions=3, texts={"s02": "I actually stopped my lisinopril."}))
    assert changed.summary["conflicts"] == [{"session": "s02", "reason": "a session with this id was imported before with different content"}]
    assert changed.summary["added"] == ["s03"]
    assert Turn.objects.get(external_id="s02-t02").text == "Walked every day (s02)."


def test_invalid_input_stores_nothing_partial_but_keeps_the_raw_upload(patient):
    doc = json.loads(transcript_bytes(sessions=3))
    doc["sessions"][2]["turns"][1]["at"] = "yesterday"
    raw = json.dumps(doc).encode()
    upload = _import(raw)
    assert upload.status == Upload.Status.INVALID
    assert upload.errors == ["session s03, turn s03-t02: at: 'yesterday' is not an ISO 8601 time with an offset"]
    assert bytes(upload.raw) == raw
    assert Session.objects.count() == 0 and Turn.objects.count() == 0


def test_an_oversized_file_is_recorded_without_its_bytes(patient, settings):
    settings.TRANSCRIPT_MAX_BYTES = 100
    upload = _import(transcript_bytes(sessions=2))
    assert upload.status == Upload.Status.INVALID
    assert upload.size > 100 and bytes(upload.raw) == b""
    assert "the limit is 100" in upload.errors[0]


def test_an_unknown_patient_is_held_until_an_admin_maps_it(patient, admin_user):
    held = _import(transcript_bytes(patient="Patient/nobody-we-know"))
    assert held.status == Upload.Status.HELD and held.patient is None
    assert held.patient_ref == "Patient/nobody-we-know" and Session.objects.count() == 0
    mapped = upload_map(upload_id=held.pk, patient=patient, user=admin_user)
    assert mapped.status == Upload.Status.IMPORTED and mapped.patient == patient
    assert Session.objects.filter(patient=patient).count() == 2
    assert AuditEvent.objects.filter(action="transcript.map", object_id=str(held.pk)).exists()


def test_a_mapping_cannot_file_a_transcript_under_a_patient_other_than_the_one_it_names(patient, admin_user):
    from reconcile_app.fhir.services import patient_upsert_from_resource

    other = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": "pt-other"})
    held = _import(transcript_bytes(patient="urn:other-platform|X-9"))
    Upload.objects.filter(pk=held.pk).update(patient_ref="")
    # Now the file names a known patient (someone else): mapping it to `patient` is refused.
    Patient = type(patient)
    Patient.objects.filter(pk=other.pk).update(identifiers=[{"system": "urn:other-platform", "value": "X-9"}])
    refused = upload_map(upload_id=held.pk, patient=patient, user=admin_user)
    assert refused.status == Upload.Status.INVALID and "names urn:other-platform|X-9" in refused.errors[0]
    with pytest.raises(PermanentError):
        upload_map(upload_id=held.pk, patient=patient, user=admin_user)


def test_the_patient_is_matched_by_identifier_system_and_value(patient):
    upload = _import(transcript_bytes(patient="urn:coach-platform:member|M-1001"))
    assert upload.status == Upload.Status.IMPORTED and upload.patient == patient
    other_system = _import(transcript_bytes(patient="urn:elsewhere|M-1001"))
    assert other_system.status == Upload.Status.HELD


def test_a_file_naming_another_patient_is_refused_for_the_chosen_patient(patient):
    upload = _import(transcript_bytes(patient="Patient/someone-else"), patient=patient)
    assert upload.status == Upload.Status.INVALID
    assert "names Patient/someone-else" in upload.errors[0]


def test_withdrawing_a_session_revokes_its_memories_findings_and_text_but_keeps_raw_and_audit(patient, admin_user, fake_engines):
    upload = _import(transcript_bytes(sessions=2, texts={"s01": "I skipped my pill", "s02": "I skipped my pill again"}))
    pipeline_patient_drain(patient_id=patient.pk)
    s01 = Session.objects.get(external_id="s01")
    assert Memory.objects.filter(session=s01).count() == 1 and Finding.objects.filter(session=s01).count() == 1
    from reconcile_app.triage.models import TriageItem

    assert TriageItem.objects.filter(finding__session=s01).count() == 1  # the gap was routed to the queue
    session_withdraw(session_id=s01.pk, user=admin_user, reason="patient asked")
    # Nothing is deleted in place: the rows stay, revoked, without the patient's words; the item leaves the queue.
    item = TriageItem.objects.get(patient_id=patient.pk, finding__session__external_id="s01")
    assert item.status == "withdrawn" and item.summary == "" and not item.is_open
    assert TriageItem.objects.filter(finding__session__external_id="s02", status="new").count() == 1
    s01.refresh_from_db()
    assert s01.withdrawn_at is not None and s01.pipeline_status == Session.Pipeline.WITHDRAWN
    memory = Memory.objects.get(session=s01)
    assert (memory.status, memory.content, memory.quote, memory.attributes, memory.turn_id) == ("revoked", "", "", {}, None)
    assert memory.events.get(action="revoke").actor == admin_user
    assert list(Finding.objects.filter(session=s01).values_list("status", "explanation")) == [("revoked", "")]
    assert not Turn.objects.filter(session=s01).exists()
    assert Memory.objects.filter(session__external_id="s02", status="current").count() == 1  # the other session is untouched
    assert bytes(Upload.objects.get(pk=upload.pk).raw) == transcript_bytes(sessions=2, texts={"s01": "I skipped my pill", "s02": "I skipped my pill again"})
    assert AuditEvent.objects.get(action="transcript.withdraw", object_type="session", object_id=str(s01.pk)).details["memories_removed"] == 1
    assert AuditEvent.objects.get(action="ledger.revoke", object_id=str(s01.pk)).details["findings_revoked"] == 1
    resent = _import(transcript_bytes(sessions=2, texts={"s01": "I skipped my pill", "s02": "I skipped my pill again"}))
    assert resent.summary["withdrawn"] == ["s01"] and not Turn.objects.filter(session=s01).exists()


def test_withdrawing_an_upload_seals_it_and_withdraws_all_its_sessions(patient, admin_user, fake_engines):
    upload = _import(transcript_bytes(sessions=2, texts={"s01": "my pill"}))
    pipeline_patient_drain(patient_id=patient.pk)
    upload_withdraw(upload_id=upload.pk, user=admin_user)
    upload.refresh_from_db()
    assert upload.sealed_at is not None and upload.status == Upload.Status.WITHDRAWN and bytes(upload.raw)
    assert set(Memory.objects.values_list("status", flat=True)) == {"revoked"} and not Memory.objects.exclude(content="").exists()
    assert set(Finding.objects.values_list("status", flat=True)) == {"revoked"}
    assert set(Session.objects.values_list("pipeline_status", flat=True)) == {"withdrawn"}
    assert upload_import(upload_id=upload.pk).status == Upload.Status.WITHDRAWN  # sealed: never processed again


def test_only_a_failed_session_can_be_retried(patient, admin_user, django_capture_on_commit_callbacks):
    _import(transcript_bytes(sessions=1))
    session = Session.objects.get()
    with pytest.raises(PermanentError):
        session_retry(session_id=session.pk, user=admin_user)
    Session.objects.filter(pk=session.pk).update(pipeline_status="failed", pipeline_error="boom")
    with django_capture_on_commit_callbacks() as callbacks:
        session_retry(session_id=session.pk, user=admin_user)
    session.refresh_from_db()
    assert session.pipeline_status == "pending" and session.pipeline_error == ""
    assert len(callbacks) == 1  # the pipeline is kicked after commit
