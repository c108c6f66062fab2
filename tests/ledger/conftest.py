"""Ledger fixtures: the sandbox EHR over live HTTP, and a patient whose record and conversations are real."""
from __future__ import annotations

import json

import pytest

from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.services import record_pull
from reconcile_app.pipeline import pipeline_patient_drain
from reconcile_app.transcripts.models import Upload
from reconcile_app.transcripts.services import upload_import, upload_receive
from tests.smart.sandbox_env import PATIENT, browser, eager_celery, sandbox_ehr, sandbox_iss  # noqa: F401


def conversation(*texts: str, patient: str = f"Patient/{PATIENT}", start_day: int = 5) -> bytes:
    """A coaching-transcript/v1 file: one session per text (a coach turn, then the patient's)."""
    sessions = []
    for i, text in enumerate(texts, start=1):
        sid, day = f"s{i:02d}", f"2026-02-{start_day + i:02d}"
        sessions.append({"id": sid, "started_at": f"{day}T18:00:00-05:00", "turns": [
            {"id": f"{sid}-t01", "speaker": "coach", "at": f"{day}T18:00:00-05:00", "text": "How have things been this week?"},
            {"id": f"{sid}-t02", "speaker": "patient", "at": f"{day}T18:01:00-05:00", "text": text},
        ]})
    return json.dumps({"format": "coaching-transcript/v1", "patient": patient, "sessions": sessions}).encode()


def heard(patient: Patient, *texts: str) -> Upload:
    """Import the conversation and run the real pipeline (rules engines) over it."""
    upload = upload_receive(raw=conversation(*texts, patient=patient.reference), filename="t.json", source=Upload.Source.CLI)
    upload = upload_import(upload_id=upload.pk, start_pipeline=False)
    pipeline_patient_drain(patient_id=patient.pk)
    return upload


@pytest.fixture(autouse=True)
def _in_process_tasks(eager_celery) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """Tasks run in-process even when CI configures a real broker: these tests are about what the
    ledger propagates (write-backs, retractions, re-evaluations), not the queue; with no worker
    consuming the broker a write-back queued by a test would stay pending."""


@pytest.fixture
def ehr_patient(sandbox_ehr, eager_celery):  # type: ignore[no-untyped-def]  # noqa: F811
    """smart-pat-1 of the sandbox (metformin active, glipizide stopped, penicillin allergy), pulled
    through Backend Services like the scheduled refresh does."""
    patient = Patient.objects.create(registration=sandbox_ehr, fhir_id=PATIENT)
    pull = record_pull(patient=patient)
    assert pull.status == "ok", pull.error
    return patient
