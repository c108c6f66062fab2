"""Real workers on Redis and PostgreSQL: a SIGKILL during extraction duplicates nothing after
redelivery, and two workers keep each patient's sessions strictly in order, one run at a time."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.pipeline import pipeline_enqueue
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Session, Turn, Upload
from reconcile_app.transcripts.services import upload_import, upload_receive
from tests.conftest import ROOT, _broker_is_real, need

from .conftest import transcript_bytes

pytestmark = pytest.mark.services


@pytest.fixture
def start_worker(transactional_db: None, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen]]:
    """Start workers running tests.transcripts.worker_app (fake engines) against the test database."""
    from django.db import connection

    need(_broker_is_real(), "CELERY_BROKER_URL (redis://) not set")
    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    from config.celery_app import app

    app.control.purge()
    procs: list[tuple[subprocess.Popen, object]] = []

    def start(name: str, *, concurrency: int = 1, **extra_env: str) -> subprocess.Popen:
        db = connection.settings_dict
        env = dict(os.environ)
        env.update(
            DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            DJANGO_SETTINGS_MODULE="config.settings.test", DB_CONN_MAX_AGE="0", **extra_env,
        )
        node = f"{name}-{os.getpid()}"
        log = open(tmp_path / f"{name}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(  # its own process group, so a test can kill the whole worker at once
            [sys.executable, "-m", "celery", "-A", "tests.transcripts.worker_app", "worker", "--pool=prefork",
             f"--concurrency={concurrency}", "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", f"{node}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        procs.append((proc, log))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(f"{node}@" in n for reply in app.control.ping(timeout=1.0) or [] for n in reply):
                return proc
            if proc.poll() is not None:
                pytest.fail(f"worker {name} exited during start-up: {(tmp_path / f'{name}.log').read_text()[-2000:]}")
        pytest.fail(f"worker {name} did not answer a ping within 60 s")

    yield start
    for proc, log in procs:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()  # type: ignore[attr-defined]


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _import(raw: bytes) -> Upload:
    upload = upload_receive(raw=raw, filename="t.json", source=Upload.Source.API)
    return upload_import(upload_id=upload.pk, start_pipeline=False)


def _all_done(patients: list) -> Callable[[], bool]:  # type: ignore[type-arg]
    return lambda: not Session.objects.filter(patient__in=patients).exclude(pipeline_status="done").exists()


def test_a_worker_killed_during_extraction_leaves_no_duplicate_after_redelivery(start_worker, patient, tmp_path):
    pause = tmp_path / "paused.pid"
    start_worker("kill", concurrency=1, FAKE_PAUSE=str(pause))
    _import(transcript_bytes(sessions=2, texts={"s01": "I skipped my pill", "s02": "Took my pill daily"}))
    assert pipeline_enqueue(patient_id=patient.pk)
    _wait_until(pause.exists, 60, "the first extraction to start")
    time.sleep(0.3)
    os.kill(int(pause.read_text()), signal.SIGKILL)  # the pool process running the task dies mid-extraction
    # acks_late + reject_on_worker_lost: the message goes back to the queue and a new pool process
    # takes it with the same task id, which reclaims the patient's lease at once.
    _wait_until(_all_done([patient]), 90, "the redelivered task to finish")
    patient_turns = Turn.objects.filter(session__patient=patient, speaker="patient").count()
    assert Memory.objects.filter(patient=patient).count() == patient_turns == 2
    assert Finding.objects.filter(patient=patient).count() == 2
    assert sorted(Memory.objects.values_list("turn__external_id", flat=True)) == ["s01-t02", "s02-t02"]
    first = ExtractionRun.objects.get(session__external_id="s01")
    assert ExtractionRun.objects.filter(session__patient=patient).count() == 2
    assert first.attempts == 2  # the killed attempt, then the redelivered one


def test_a_whole_worker_killed_mid_extraction_is_redelivered_to_another_after_the_visibility_timeout(start_worker, patient, tmp_path):
    """The node dies (main process and pool, SIGKILL): nothing acknowledges or requeues the message,
    so Redis hands it to the next worker after `visibility_timeout` (5 s here, an hour by default)."""
    pause = tmp_path / "paused.pid"
    first = start_worker("doomed", FAKE_PAUSE=str(pause), VISIBILITY_TIMEOUT="5")
    _import(transcript_bytes(sessions=2, texts={"s01": "I skipped my pill", "s02": "Took my pill daily"}))
    assert pipeline_enqueue(patient_id=patient.pk)
    _wait_until(pause.exists, 60, "the first extraction to start")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    start_worker("survivor", FAKE_PAUSE=str(pause), VISIBILITY_TIMEOUT="5")
    _wait_until(_all_done([patient]), 90, "the message to be redelivered to the surviving worker")
    assert Memory.objects.filter(patient=patient).count() == 2 and Finding.objects.filter(patient=patient).count() == 2
    assert ExtractionRun.objects.get(session__external_id="s01").attempts == 2


def test_two_workers_keep_each_patients_sessions_in_order_and_never_run_one_patient_twice(start_worker, patient, tmp_path):
    from reconcile_app.fhir.services import snapshot_import_bundle

    bundle = json.loads((Path(__file__).parent / "data" / "bundle_small.json").read_text())
    bundle["entry"][0]["resource"]["id"] = "pt-test-2"
    other = snapshot_import_bundle(bundle=bundle).patient
    log = tmp_path / "extractions.jsonl"
    env = {"FAKE_LOG": str(log), "FAKE_SLEEP": "0.3", "PIPELINE_BUDGET": "0"}  # one session per message: maximal hand-overs
    start_worker("w1", **env)
    start_worker("w2", **env)
    _import(transcript_bytes(patient="Patient/pt-test-1", sessions=5, prefix="a"))
    _import(transcript_bytes(patient="Patient/pt-test-2", sessions=5, prefix="b"))
    for _ in range(3):  # duplicate kicks, as a busy platform and the sweep would produce
        for p in (patient, other):
            assert pipeline_enqueue(patient_id=p.pk)
    _wait_until(_all_done([patient, other]), 120, "both patients to finish")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for prefix in ("a", "b"):
        mine = sorted((r for r in rows if r["session"].startswith(prefix)), key=lambda r: r["start"])
        assert [r["session"] for r in mine] == [f"{prefix}{i:02d}" for i in range(1, 6)]  # in order, each once
        assert all(later["start"] >= earlier["end"] for earlier, later in zip(mine, mine[1:]))  # never two at once
        assert [r["prior"] for r in mine] == [0, 1, 2, 3, 4]  # each saw every earlier session's memory
    assert len({r["pid"] for r in rows}) == 2, "both workers should have taken part"


def test_a_broker_outage_during_an_upload_loses_nothing_and_the_sweep_restarts_the_pipeline(start_worker, patient, tmp_path):
    """The CLI import runs against a dead broker (a closed port): the upload is committed and the
    failed enqueue is only logged. With the broker back, the periodic sweep enqueues the patient."""
    from django.db import connection

    from reconcile_app.pipeline import pipeline_sweep

    path = tmp_path / "export.json"
    path.write_bytes(transcript_bytes(sessions=2))
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
               DJANGO_SETTINGS_MODULE="config.settings.test", CELERY_BROKER_URL="redis://127.0.0.1:1/0")
    done = subprocess.run([sys.executable, "manage.py", "import_transcript", str(path), "--no-wait"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pipeline enqueue for patient" in done.stderr and "the sweep will retry" in done.stderr
    upload = Upload.objects.get()
    assert upload.status == Upload.Status.IMPORTED and bytes(upload.raw) == path.read_bytes()
    assert set(Session.objects.values_list("pipeline_status", flat=True)) == {"pending"}
    start_worker("sweep")
    assert pipeline_sweep() == 1  # what the beat entry does every minute
    _wait_until(_all_done([patient]), 60, "the swept patient to finish")
    assert Memory.objects.filter(patient=patient).count() == 2
