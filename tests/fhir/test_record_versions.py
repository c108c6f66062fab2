"""Record versions and refresh: a new version only when the content differs from the latest (changing
back is a new version too), announced to the ledger; a scheduled Backend Services refresh of stale records."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.fhir.models import Patient, RecordPull
from reconcile_app.fhir.services import records_refresh_due, snapshot_store
from reconcile_app.fhir.signals import record_changed
from reconcile_app.smart.models import EhrRegistration

pytestmark = pytest.mark.django_db

PATIENT = {"resourceType": "Patient", "id": "p1"}
ACTIVE = {"resourceType": "MedicationRequest", "id": "m1", "status": "active", "subject": {"reference": "Patient/p1"}}
STOPPED = {**ACTIVE, "status": "stopped"}


@pytest.fixture
def announced():  # type: ignore[no-untyped-def]
    seen: list[dict] = []

    def listen(sender, **kwargs):  # type: ignore[no-untyped-def]
        seen.append({k: kwargs[k] for k in ("patient_id", "snapshot_id", "previous_id")})

    record_changed.connect(listen, dispatch_uid="test-record-changed")
    yield seen
    record_changed.disconnect(dispatch_uid="test-record-changed")


def test_a_record_that_changes_back_is_a_new_latest_version_and_each_change_is_announced(announced) -> None:  # type: ignore[no-untyped-def]
    patient = Patient.objects.create(fhir_id="p1")
    v1 = snapshot_store(patient=patient, resources=[PATIENT, ACTIVE], source="bundle")
    assert snapshot_store(patient=patient, resources=[ACTIVE, PATIENT], source="bundle").pk == v1.pk  # same content, any order
    v2 = snapshot_store(patient=patient, resources=[PATIENT, STOPPED], source="bundle")
    v3 = snapshot_store(patient=patient, resources=[PATIENT, ACTIVE], source="bundle")
    assert [s.version for s in (v1, v2, v3)] == [1, 2, 3] and v3.content_sha256 == v1.content_sha256
    assert announced == [
        {"patient_id": patient.pk, "snapshot_id": v1.pk, "previous_id": None},
        {"patient_id": patient.pk, "snapshot_id": v2.pk, "previous_id": v1.pk},
        {"patient_id": patient.pk, "snapshot_id": v3.pk, "previous_id": v2.pk},
    ]


def test_the_scheduled_refresh_pulls_only_stale_ehr_records_through_backend_services(settings, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    settings.RECORD_REFRESH_SECONDS = 3600
    backend = EhrRegistration.objects.create(name="ehr", iss="https://ehr.example/fhir", client_id="app", backend_client_id="svc")
    no_backend = EhrRegistration.objects.create(name="other", iss="https://other.example/fhir", client_id="app")
    stale = Patient.objects.create(registration=backend, fhir_id="stale")
    fresh = Patient.objects.create(registration=backend, fhir_id="fresh")
    never = Patient.objects.create(registration=backend, fhir_id="never")
    busy = Patient.objects.create(registration=backend, fhir_id="busy")
    Patient.objects.create(registration=no_backend, fhir_id="no-backend")
    Patient.objects.create(fhir_id="from-a-file")
    old = RecordPull.objects.create(patient=stale, status=RecordPull.Status.OK)
    RecordPull.objects.filter(pk=old.pk).update(started_at=timezone.now() - timedelta(hours=2))
    RecordPull.objects.create(patient=fresh, status=RecordPull.Status.OK)
    running = RecordPull.objects.create(patient=busy, status=RecordPull.Status.RUNNING)
    RecordPull.objects.filter(pk=running.pk).update(started_at=timezone.now() - timedelta(hours=2, seconds=-30))
    settings.CELERY_TASK_TIME_LIMIT = 3 * 3600  # the busy pull is still within its time limit

    with django_capture_on_commit_callbacks() as callbacks:
        assert records_refresh_due() == 2
    queued = set(RecordPull.objects.filter(status=RecordPull.Status.RUNNING).exclude(pk=running.pk).values_list("patient__fhir_id", flat=True))
    assert queued == {"stale", "never"}
    assert len(callbacks) == 2  # one Backend Services pull task each, after the commit
