"""PostgreSQL going away in the middle of the pipeline: every client connection is cut, as a restart or a
failover cuts them. The step in flight is retried, never FAILED, and the patient's memories and findings
end exactly as an uninterrupted run leaves them: nothing lost, nothing doubled. Needs real PostgreSQL
(a connection cut cannot be simulated on SQLite)."""
from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from reconcile_app.core.exceptions import RetryableError
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.pipeline import Outcome, pipeline_patient_advance
from reconcile_app.reconciliation.models import Finding, ReconciliationRun
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.services import upload_import, upload_receive
from tests.conftest import need
from tests.transcripts.conftest import fake_engines, patient, transcript_bytes  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _dsn() -> str:
    db = connection.settings_dict
    return f"postgresql://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _cut_every_connection_of_this_database() -> int:
    """What a restart does to the clients: each backend of the test database is terminated."""
    with psycopg.connect(_dsn(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def _snapshot_of_results(patient) -> dict:  # type: ignore[no-untyped-def]
    return {
        "statuses": list(Session.objects.filter(patient=patient).order_by("started_at").values_list("pipeline_status", flat=True)),
        "memories": sorted(Memory.objects.filter(patient=patient).values_list("session__external_id", "content_sha256")),
        "findings": sorted(Finding.objects.filter(patient=patient).values_list("session__external_id", "memory__content_sha256", "kind")),
        "extraction_runs_done": ExtractionRun.objects.filter(session__patient=patient, status="done").count(),
        "reconciliation_runs_done": ReconciliationRun.objects.filter(session__patient=patient, status="done").count(),
    }


@pytest.mark.parametrize("cut_at", ["extraction", "reconciliation"])
def test_postgresql_cut_mid_pipeline_retries_the_step_and_loses_or_doubles_nothing(patient, fake_engines, cut_at: str) -> None:  # type: ignore[no-untyped-def]
    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    extractor, reconciler = fake_engines
    texts = {"s01": "my pill", "s02": "walked", "s03": "my pill again", "s04": "my pill"}
    upload = upload_receive(raw=transcript_bytes(sessions=4, texts=texts), filename="t.json", source=Upload.Source.API)
    assert upload_import(upload_id=upload.pk, start_pipeline=False).status == Upload.Status.IMPORTED

    calls = {"n": 0}
    target = extractor if cut_at == "extraction" else reconciler
    method = "extract_session" if cut_at == "extraction" else "reconcile"
    original = getattr(target, method)

    def cut_on_the_third_session(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        result = original(*args, **kwargs)
        if calls["n"] == 3:
            assert _cut_every_connection_of_this_database() >= 1
        return result

    setattr(target, method, cut_on_the_third_session)
    token = "task-id-1"  # a task's retry carries its own id: it reclaims the lease it held
    with pytest.raises(RetryableError, match="database was unavailable"):
        pipeline_patient_advance(patient_id=patient.pk, token=token, budget=3600)

    statuses = list(Session.objects.filter(patient=patient).order_by("started_at").values_list("pipeline_status", flat=True))
    assert statuses[:2] == ["done", "done"] and "failed" not in statuses  # the outage is not the session's fault
    assert Memory.objects.filter(session__external_id="s03", patient=patient).count() == 0 or cut_at == "reconciliation"

    # The retry (Celery redelivers with the same task id after its backoff) finishes the patient.
    assert pipeline_patient_advance(patient_id=patient.pk, token=token, budget=3600) == Outcome.IDLE
    interrupted = _snapshot_of_results(patient)

    # Running everything again from scratch on the same data gives the same rows: nothing lost or doubled.
    Session.objects.filter(patient=patient).update(pipeline_status=Session.Pipeline.PENDING)
    assert pipeline_patient_advance(patient_id=patient.pk, token="task-id-2", budget=3600) == Outcome.IDLE
    assert _snapshot_of_results(patient) == interrupted
    assert interrupted["statuses"] == ["done"] * 4
    assert interrupted["extraction_runs_done"] == 4 and interrupted["reconciliation_runs_done"] == 4
    assert len(interrupted["memories"]) == len(set(interrupted["memories"])) == 4
    assert len(interrupted["findings"]) == 4
    assert sum(1 for f in interrupted["findings"] if f[2] == "gap") == 3  # the three 'pill' sessions
