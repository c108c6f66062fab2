"""The pipeline: strict per-patient order, one run per patient at a time, idempotent, failures visible,
nothing lost when the broker is down (mechanics, with tiny fake engines; real workers in tests/transcripts)."""
from __future__ import annotations

import json
from unittest import mock

import pytest
from kombu.exceptions import OperationalError

from reconcile_app.core.exceptions import PermanentError, RetryableError
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.pipeline import (
    Outcome,
    lease_claim,
    lease_release,
    pipeline_patient_advance,
    pipeline_patient_advance_task,
    pipeline_patient_drain,
    pipeline_sweep,
)
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.services import session_retry, session_withdraw, upload_import, upload_receive
from tests.transcripts.conftest import fake_engines, patient, transcript_bytes  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def _import(raw: bytes) -> Upload:
    upload = upload_receive(raw=raw, filename="t.json", source=Upload.Source.API)
    return upload_import(upload_id=upload.pk, start_pipeline=False)


def _statuses(patient) -> list[str]:  # type: ignore[no-untyped-def]
    return list(Session.objects.filter(patient=patient).order_by("started_at").values_list("pipeline_status", flat=True))


def test_sessions_are_processed_oldest_first_whatever_the_file_order(patient, fake_engines):
    extractor, _ = fake_engines
    doc = json.loads(transcript_bytes(sessions=3, texts={"s02": "my pill"}))
    doc["sessions"].reverse()  # a platform may list newest first
    _import(json.dumps(doc).encode())
    assert pipeline_patient_drain(patient_id=patient.pk) == Outcome.IDLE
    assert extractor.calls == ["s01", "s02", "s03"]
    assert _statuses(patient) == ["done", "done", "done"]
    assert Finding.objects.filter(kind="gap", session__external_id="s02").count() == 1


def test_running_again_creates_no_duplicate_memory_or_finding(patient, fake_engines):
    _import(transcript_bytes(sessions=2, texts={"s01": "my pill"}))
    pipeline_patient_drain(patient_id=patient.pk)
    counts = (Memory.objects.count(), Finding.objects.count(), ExtractionRun.objects.count())
    Session.objects.update(pipeline_status=Session.Pipeline.EXTRACTING)  # as if a worker died mid-way
    pipeline_patient_drain(patient_id=patient.pk)
    assert (Memory.objects.count(), Finding.objects.count(), ExtractionRun.objects.count()) == counts
    assert _statuses(patient) == ["done", "done"]


def test_a_new_extraction_run_counts_one_attempt_and_one_left_running_counts_its_redo(patient, fake_engines):
    from reconcile_app.core.runs import run_mark_running
    from reconcile_app.narrative.services import extraction_run_get_or_create

    _import(transcript_bytes(sessions=2, texts={"s01": "my pill"}))
    killed = extraction_run_get_or_create(session=Session.objects.get(external_id="s02"))
    run_mark_running(killed)  # a worker killed during the engine call: the run is left running, with no memory
    pipeline_patient_drain(patient_id=patient.pk)
    assert list(ExtractionRun.objects.order_by("session__external_id").values_list("status", "attempts")) == [("done", 1), ("done", 2)]


def test_a_second_delivery_sees_the_lease_and_leaves_the_patient_alone(patient, fake_engines):
    extractor, _ = fake_engines
    _import(transcript_bytes(sessions=1))
    assert lease_claim(patient_id=patient.pk, token="task-a")
    assert pipeline_patient_advance(patient_id=patient.pk, token="task-b") == Outcome.BUSY
    assert extractor.calls == [] and _statuses(patient) == ["pending"]
    # The holder's own redelivery (same task id) reclaims the lease at once.
    assert pipeline_patient_advance(patient_id=patient.pk, token="task-a") == Outcome.IDLE
    assert _statuses(patient) == ["done"]


def test_a_permanent_failure_is_shown_and_holds_back_later_sessions_until_retried(patient, fake_engines, admin_user):
    extractor, _ = fake_engines
    extractor.fail_sessions["s02"] = PermanentError("engine refused this session")
    _import(transcript_bytes(sessions=3))
    assert pipeline_patient_drain(patient_id=patient.pk) == Outcome.BLOCKED
    assert _statuses(patient) == ["done", "failed", "pending"]
    assert Session.objects.get(external_id="s02").pipeline_error == "engine refused this session"
    del extractor.fail_sessions["s02"]
    session_retry(session_id=Session.objects.get(external_id="s02").pk, user=admin_user)
    assert pipeline_patient_drain(patient_id=patient.pk) == Outcome.IDLE
    assert _statuses(patient) == ["done", "done", "done"]


def test_an_unexpected_engine_crash_fails_the_session_without_its_text(patient, fake_engines):
    extractor, _ = fake_engines
    extractor.fail_sessions["s01"] = KeyError("lisinopril")
    _import(transcript_bytes(sessions=1))
    pipeline_patient_drain(patient_id=patient.pk)
    session = Session.objects.get()
    assert session.pipeline_status == "failed"
    assert session.pipeline_error == "internal error (KeyError); retry or report it"


def test_retryable_errors_are_retried_by_the_task_then_fail_visibly(patient, fake_engines):
    extractor, _ = fake_engines
    extractor.fail_sessions["s01"] = RetryableError("engine timed out")
    _import(transcript_bytes(sessions=1))
    with pytest.raises(RetryableError):
        pipeline_patient_advance(patient_id=patient.pk, token="t1", final_attempt=False)
    assert _statuses(patient) == ["extracting"]  # still active: the retry will pick it up
    # Until the retry comes (same task id), the lease keeps the sweep and other messages off.
    assert pipeline_patient_advance(patient_id=patient.pk, token="other") == Outcome.BUSY
    with mock.patch.object(pipeline_patient_advance_task, "apply_async") as send:
        assert pipeline_sweep() == 0 and not send.called
    lease_release(patient_id=patient.pk, token="t1")
    from config.celery_app import app

    # Eager retries chain only when eager errors do not propagate (each retry is a nested apply()).
    # Set and restore the one key: copying the whole conf back would shadow later changes to it.
    old = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    try:
        with mock.patch("reconcile_app.pipeline.pipeline_enqueue"):
            pipeline_patient_advance_task.apply(args=(patient.pk,))
    finally:
        app.conf.task_eager_propagates = old
    assert extractor.calls.count("s01") == 1 + 1 + pipeline_patient_advance_task.max_retries
    session = Session.objects.get()
    assert session.pipeline_status == "failed" and session.pipeline_error == "gave up after retries: engine timed out"


def test_withdrawal_while_the_engines_run_leaves_no_live_memory_behind(patient, fake_engines, admin_user):
    extractor, _ = fake_engines
    _import(transcript_bytes(sessions=1, texts={"s01": "my pill"}))
    session = Session.objects.get()
    extractor.on_call = lambda _input: session_withdraw(session_id=session.pk, user=admin_user)
    pipeline_patient_drain(patient_id=patient.pk)
    session.refresh_from_db()
    assert session.pipeline_status == "withdrawn"
    # Whatever the engines wrote after the withdrawal is revoked at once, without the patient's words.
    assert not Memory.objects.exclude(status="revoked", content="").exists()
    assert not Finding.objects.exclude(status="revoked").exists()


def test_findings_are_routed_into_the_triage_queue(patient, fake_engines):
    services = pytest.importorskip("reconcile_app.triage.services")
    if not hasattr(services, "triage_items_route"):
        pytest.skip("triage routing not built yet")
    from reconcile_app.triage.models import TriageItem

    _import(transcript_bytes(sessions=2, texts={"s02": "I skipped my pill"}))
    pipeline_patient_drain(patient_id=patient.pk)
    assert list(TriageItem.objects.values_list("finding__session__external_id", flat=True)) == ["s02"]


def test_a_broker_outage_loses_nothing_and_the_sweep_restarts_the_pipeline(patient, fake_engines, django_capture_on_commit_callbacks):
    raw = transcript_bytes(sessions=2)
    with mock.patch.object(pipeline_patient_advance_task, "apply_async", side_effect=OperationalError("connection refused")) as send:
        with django_capture_on_commit_callbacks(execute=True):
            upload = upload_receive(raw=raw, filename="t.json", source=Upload.Source.API)
            upload_import(upload_id=upload.pk)
        assert send.called  # the enqueue was tried after the commit, failed, and did not raise
    upload.refresh_from_db()
    assert upload.status == Upload.Status.IMPORTED and bytes(upload.raw) == raw
    assert _statuses(patient) == ["pending", "pending"]
    # The broker is back: the periodic sweep re-enqueues the patient and the worker catches up.
    with mock.patch.object(pipeline_patient_advance_task, "apply_async") as send:
        assert pipeline_sweep() == 1
    assert send.call_args.args[0] == (patient.pk,)
    pipeline_patient_advance_task.apply(args=(patient.pk,))
    assert _statuses(patient) == ["done", "done"]


def test_the_sweep_skips_patients_whose_lease_is_held(patient, fake_engines):
    _import(transcript_bytes(sessions=1))
    lease_claim(patient_id=patient.pk, token="running-now")
    with mock.patch.object(pipeline_patient_advance_task, "apply_async") as send:
        assert pipeline_sweep() == 0
    assert not send.called


# --- issue 12: a short lease kept alive by a heartbeat, so a dead worker's patient resumes fast ------


def test_the_lease_is_short_and_a_dead_holders_patient_is_swept_within_two_minutes(settings):
    from reconcile_app.pipeline import heartbeat_seconds, lease_seconds

    sweep = settings.CELERY_BEAT_SCHEDULE["pipeline-sweep"]["schedule"]
    assert heartbeat_seconds() * 3 < lease_seconds()  # a live holder renews several times per lease
    assert lease_seconds() + sweep < 120  # worst case from the last renewal to the sweep's message


def test_a_lapsed_lease_of_a_dead_worker_is_taken_over_by_the_sweep(patient, fake_engines):
    from datetime import timedelta

    from django.utils import timezone

    from reconcile_app.transcripts.models import PatientPipeline

    _import(transcript_bytes(sessions=1))
    assert lease_claim(patient_id=patient.pk, token="worker-that-died")
    PatientPipeline.objects.filter(patient=patient).update(lease_until=timezone.now() - timedelta(seconds=1))
    with mock.patch.object(pipeline_patient_advance_task, "apply_async") as send:
        assert pipeline_sweep() == 1
    pipeline_patient_advance_task.apply(args=(patient.pk,))
    assert _statuses(patient) == ["done"] and Memory.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_the_lease_while_a_task_works_and_stops_when_it_is_lost(patient, settings):
    import time
    from datetime import timedelta

    from django.utils import timezone

    from reconcile_app.pipeline import LeaseHeartbeat
    from reconcile_app.transcripts.models import PatientPipeline

    assert lease_claim(patient_id=patient.pk, token="busy")
    PatientPipeline.objects.filter(patient=patient).update(lease_until=timezone.now() + timedelta(seconds=1))
    with LeaseHeartbeat(patient_id=patient.pk, token="busy", interval=0.2) as beat:
        time.sleep(1.0)
    renewed = PatientPipeline.objects.get(patient=patient).lease_until
    assert beat.renewals >= 2 and renewed > timezone.now() + timedelta(seconds=settings.PIPELINE_LEASE_SECONDS - 5)
    PatientPipeline.objects.filter(patient=patient).update(lease_token="someone-else")
    with LeaseHeartbeat(patient_id=patient.pk, token="busy", interval=0.1) as lost:
        time.sleep(0.5)
        assert not lost.thread.is_alive()  # found the lease taken and stopped renewing
    assert lost.renewals == 0
