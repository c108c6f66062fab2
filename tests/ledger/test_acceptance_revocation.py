"""Acceptance: revoking one session of a 20-session transcript (dev patient p02, real rules engines, the
sandbox EHR over HTTP) removes exactly the memories and findings derived from it, counted, and nothing
else; the DetectedIssue written back for it is retracted in the sandbox EHR and read back. The same
retraction against a FHIR server we did not write (@medplum/fhir-router)."""
from __future__ import annotations

import json

import pytest
import requests

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.services import record_pull
from reconcile_app.narrative.models import Memory
from reconcile_app.pipeline import pipeline_patient_drain
from reconcile_app.reconciliation.models import Finding
from reconcile_app.sandbox.models import SandboxClient
from reconcile_app.sandbox.services import sandbox_bundle_load
from reconcile_app.smart.backend import backend_token_get
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.services import session_withdraw, upload_import, upload_receive
from reconcile_app.triage import client as fhir
from reconcile_app.triage.models import Retraction, TriageItem, WriteBack
from reconcile_app.triage.services import triage_item_confirm
from reconcile_app.triage.writeback import RETRACTED_TEXT
from tests.fhir_server.fixtures import medplum_server  # noqa: F401  (the shared Node fixture)
from tests.smart.sandbox_env import BACKEND_CLIENT
from tests.triage.factories import item_create
from tests.triage.test_writeback import CITED, _patient

WRITE_SCOPES = "system/*.cruds"


def _state() -> tuple[dict, dict]:
    memories = {m.pk: (m.status, m.content, m.session_id) for m in Memory.objects.all()}
    findings = {f.pk: (f.status, f.kind, f.explanation, f.source_revoked_at) for f in Finding.objects.all()}
    return memories, findings


@pytest.mark.django_db(transaction=True)
def test_revoking_one_session_of_twenty_takes_exactly_what_was_derived_from_it_and_retracts_its_write_back(
        dev_set, sandbox_ehr, eager_celery, nurse, admin_user) -> None:  # type: ignore[no-untyped-def]
    folder = dev_set / "p02"
    bundle = json.loads((folder / "bundle.json").read_text())
    sandbox_bundle_load(bundle=bundle)
    # Backend Services with write scopes: a nurse confirms with no clinician launch alive.
    SandboxClient.objects.filter(client_id=BACKEND_CLIENT).update(scopes=WRITE_SCOPES)
    sandbox_ehr.backend_scopes = WRITE_SCOPES
    sandbox_ehr.save(update_fields=["backend_scopes"])
    patient = Patient.objects.create(registration=sandbox_ehr, fhir_id="pt-earl-hutchins")
    assert record_pull(patient=patient).status == "ok"
    upload = upload_receive(raw=(folder / "transcript.json").read_bytes(), filename="p02.json", source=Upload.Source.CLI)
    upload_import(upload_id=upload.pk, start_pipeline=False)
    pipeline_patient_drain(patient_id=patient.pk)
    sessions = list(Session.objects.filter(patient=patient).order_by("started_at"))
    assert len(sessions) == 20 and {s.pipeline_status for s in sessions} == {"done"}

    # The session to withdraw: one whose own discrepancy is alone in its queue item; a nurse confirms it.
    item = next(i for i in TriageItem.objects.filter(patient=patient, status="new", quote_count=1).order_by("finding__session__started_at"))
    session = item.finding.session
    triage_item_confirm(item=item, user=nurse, note="discussed with the patient")
    wb = WriteBack.objects.get(item=item)
    assert wb.status == "done", wb.last_error

    memories_before, findings_before = _state()
    derived_memories = set(Memory.objects.filter(session=session).values_list("pk", flat=True))
    derived_findings = set(Finding.objects.filter(memory_id__in=derived_memories).values_list("pk", flat=True))
    assert len(derived_memories) >= 1 and item.finding_id in derived_findings

    session_withdraw(session_id=session.pk, user=admin_user, reason="patient withdrew consent")

    memories_after, findings_after = _state()
    audit = AuditEvent.objects.get(action="ledger.revoke", object_id=str(session.pk))
    assert audit.details["memories"] == len(derived_memories)
    assert audit.details["findings_revoked"] + audit.details["findings_kept"] == len(derived_findings)
    assert audit.details["findings_kept"] == 1 and audit.details["retractions"] == 1  # the confirmed one
    # Exactly what was derived from the session changed ...
    changed_memories = {pk for pk, state in memories_before.items() if memories_after[pk] != state}
    restored = {pk for pk in changed_memories - derived_memories if memories_after[pk][0] == "current"}
    assert changed_memories - restored == derived_memories and len(restored) == audit.details["restored"]
    assert all(memories_after[pk][:2] == ("revoked", "") for pk in derived_memories)
    changed_findings = {pk for pk, state in findings_before.items() if findings_after[pk] != state}
    restored_findings = set(Finding.objects.filter(memory_id__in=restored).values_list("pk", flat=True))
    assert changed_findings - restored_findings == derived_findings
    # ... and nothing else: every other session's memories and findings are as they were.
    others = [pk for pk, state in memories_before.items() if state[2] != session.pk and pk not in restored]
    assert all(memories_after[pk] == memories_before[pk] for pk in others)
    assert Session.objects.filter(patient=patient, withdrawn_at__isnull=True).count() == 19

    # The DetectedIssue written for it is retracted in the sandbox EHR, read back.
    retraction = Retraction.objects.get(writeback=wb)
    assert (retraction.status, retraction.method) == ("done", "entered-in-error"), retraction.last_error
    _, token = backend_token_get(registration=sandbox_ehr)
    stored = fhir.fhir_resource_read(base_url=sandbox_ehr.iss, bearer=token, resource_type="DetectedIssue", resource_id=wb.resource_id)
    assert stored["status"] == "entered-in-error" and stored["detail"] == RETRACTED_TEXT and "evidence" not in stored
    assert stored["meta"]["versionId"] == "2" and stored["patient"] == {"reference": "Patient/pt-earl-hutchins"}
    item.refresh_from_db()
    assert (item.status, item.source_revoked_at is not None) == ("confirmed", True)


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("prefer_delete", [False, True], ids=["entered-in-error", "deleted"])
def test_a_write_back_to_medplum_is_retracted_there_and_read_back(medplum_server, nurse, admin_user, settings, prefer_delete) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from reconcile_app import pipeline  # noqa: F401  (its receiver hands the withdrawal to the ledger)

    settings.RETRACTION_PREFER_DELETE = prefer_delete
    base, patient_id = medplum_server
    item = item_create(patient=_patient(base=base, fhir_id=patient_id, token="any"), citations=CITED)
    triage_item_confirm(item=item, user=nurse)
    wb = WriteBack.objects.get(item=item)
    assert wb.status == "done", wb.last_error
    session_withdraw(session_id=item.finding.session_id, user=admin_user)
    retraction = Retraction.objects.get(writeback=wb)
    assert retraction.status == "done", retraction.last_error
    read = requests.get(f"{base}/DetectedIssue/{wb.resource_id}", headers={"Authorization": "Bearer any"}, timeout=10)
    if prefer_delete:
        assert retraction.method == "deleted" and read.status_code in (404, 410)
    else:
        assert retraction.method == "entered-in-error" and read.status_code == 200
        stored = read.json()
        assert stored["status"] == "entered-in-error" and stored["detail"] == RETRACTED_TEXT and "evidence" not in stored
        assert [r["reference"] for r in stored["implicated"]] == ["MedicationRequest/medrx-001"]
