"""record_pull_task in a real Celery worker (Redis broker, PostgreSQL), pulling with Backend Services."""
from __future__ import annotations

import time

import pytest

from reconcile_app.fhir.models import RecordPull, RecordSnapshot
from reconcile_app.fhir.services import patient_upsert_from_resource
from reconcile_app.fhir.tasks import record_pull_task
from tests.smart.sandbox_env import PATIENT


@pytest.mark.services
def test_backend_services_pull_runs_in_a_real_worker(celery_worker_process, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    patient = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": PATIENT}, registration=sandbox_ehr)
    record_pull_task.delay(patient.pk)

    deadline = time.monotonic() + 60
    pull = None
    while time.monotonic() < deadline:
        pull = RecordPull.objects.filter(patient=patient).exclude(status=RecordPull.Status.RUNNING).first()
        if pull is not None:
            break
        time.sleep(0.5)
    assert pull is not None, "the worker did not finish the pull within 60 s"
    assert pull.status == RecordPull.Status.OK, pull.error
    assert RecordSnapshot.objects.get(patient=patient).source == RecordSnapshot.Source.BACKEND
