"""Issue 12 acceptance on real services: a worker killed with SIGKILL and a Redis outage, each on the
test's own Redis (another port, started and stopped here) with PostgreSQL, real workers running their
own beat, and gunicorn for the API. Each ends with nothing lost, nothing duplicated, and the pipeline
resumed within two minutes."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from reconcile_app.fhir.services import snapshot_import_bundle
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Session, Turn, Upload
from reconcile_app.transcripts.services import platform_create, platform_enrol
from tests.conftest import PASSWORD, ROOT, need

from .conftest import DATA, transcript_bytes

pytestmark = pytest.mark.services

RESUME_WITHIN = 120.0  # seconds: the bound from the failure to the pipeline working again
# The processes here run the product's lease, heartbeat and sweep on a shorter clock (environment and
# tests/transcripts/worker_app.py), so recovery waits seconds rather than the product's 45 s lease plus
# 30 s sweep; that the product's own values stay within RESUME_WITHIN is checked against the settings.
FAST_RECOVERY = {"PIPELINE_LEASE_SECONDS": "8", "PIPELINE_HEARTBEAT_SECONDS": "2", "PIPELINE_SWEEP_SECONDS": "4"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


class Stack:
    """Our own Redis (broker db 0, cache db 1), and the processes that use it, all on the test database."""

    def __init__(self, tmp: Path, db: dict) -> None:
        self.tmp = tmp
        self.redis_port = _free_port()
        self.redis: subprocess.Popen | None = None
        self.procs: list[subprocess.Popen] = []
        self.env = dict(os.environ)
        self.env.update(
            DATABASE_URL=f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            DJANGO_SETTINGS_MODULE="config.settings.test", DB_CONN_MAX_AGE="0",
            CELERY_BROKER_URL=f"redis://127.0.0.1:{self.redis_port}/0", CACHE_URL=f"redis://127.0.0.1:{self.redis_port}/1",
            **FAST_RECOVERY,
        )
        self.env.pop("REQUIRE_SERVICES", None)

    def redis_start(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.tmp)], stdout=open(self.tmp / "redis.log", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
        )
        _wait_until(lambda: subprocess.run(["redis-cli", "-p", str(self.redis_port), "ping"], capture_output=True).stdout.strip() == b"PONG",
                    20, "our Redis to answer")

    def redis_kill(self) -> None:
        assert self.redis is not None
        self.redis.send_signal(signal.SIGKILL)
        self.redis.wait(timeout=10)

    def worker(self, name: str, *, beat: bool = False, **extra: str) -> subprocess.Popen:
        log = self.tmp / f"{name}.log"
        args = [sys.executable, "-m", "celery", "-A", "tests.transcripts.worker_app", "worker", "--pool=prefork", "--concurrency=1",
                "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", f"{name}-{os.getpid()}@%h"]
        if beat:
            args += ["-B", "-s", str(self.tmp / f"{name}-beat")]
        proc = subprocess.Popen(args, cwd=ROOT, env={**self.env, **extra}, stdout=open(log, "ab"),  # noqa: SIM115
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        _wait_until(lambda: b"ready." in log.read_bytes() or proc.poll() is not None, 90, f"worker {name} to start")
        if proc.poll() is not None:
            pytest.fail(f"worker {name} exited: {log.read_text()[-2000:]}")
        return proc

    def gunicorn(self, **extra: str) -> str:
        port = _free_port()
        log = self.tmp / "gunicorn.log"
        proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
                                 "--timeout", "60"], cwd=ROOT, env={**self.env, **extra}, stdout=open(log, "ab"),  # noqa: SIM115
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return requests.get(f"{base}/login/", timeout=2).status_code == 200
            except requests.RequestException:
                return proc.poll() is not None
        _wait_until(up, 60, "gunicorn to answer")
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited: {log.read_text()[-2000:]}")
        return base

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        if self.redis is not None and self.redis.poll() is None:
            self.redis.terminate()
            self.redis.wait(timeout=10)


@pytest.fixture
def stack(transactional_db: None, tmp_path: Path) -> Iterator[Stack]:
    from django.db import connection

    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    need(bool(shutil.which("redis-server")), "redis-server not installed")
    s = Stack(tmp_path, connection.settings_dict)
    s.redis_start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def patient(transactional_db: None):  # type: ignore[no-untyped-def]
    return snapshot_import_bundle(bundle=json.loads((DATA / "bundle_small.json").read_text())).patient


def test_the_products_lease_and_sweep_resume_a_dead_workers_patient_within_the_bound(settings):
    """The worst case the recovery tests below exercise on a shorter clock: the lease lapses, then the next sweep."""
    from config.settings import base

    assert os.environ.get("PIPELINE_LEASE_SECONDS") is None  # the test process reads the product's defaults
    sweep = base.CELERY_BEAT_SCHEDULE["pipeline-sweep"]["schedule"]
    assert settings.PIPELINE_LEASE_SECONDS + sweep < RESUME_WITHIN
    assert settings.PIPELINE_HEARTBEAT_SECONDS < settings.PIPELINE_LEASE_SECONDS / 2  # a live holder renews in time


def _patient_turns(patient) -> int:  # type: ignore[no-untyped-def]
    return Turn.objects.filter(session__patient=patient, speaker="patient").count()


def test_a_worker_killed_with_sigkill_resumes_within_two_minutes_with_nothing_lost_or_duplicated(stack, patient, tmp_path):
    """The whole worker (main process and pool) dies mid-extraction. Its message stays unacknowledged
    in Redis for the production visibility timeout (30 min), so recovery must come from the short
    lease lapsing and the beat's sweep, which a surviving worker runs."""
    pause = tmp_path / "paused.pid"
    doomed = stack.worker("doomed", FAKE_PAUSE=str(pause))
    path = tmp_path / "export.json"
    path.write_bytes(transcript_bytes(sessions=3, texts={"s01": "I skipped my pill", "s02": "Took my pill daily"}))
    done = stack.manage("import_transcript", str(path), "--no-wait")
    assert done.returncode == 0, done.stderr[-2000:]
    _wait_until(pause.exists, 90, "the first extraction to start")
    os.killpg(doomed.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    doomed.wait(timeout=10)
    stack.worker("survivor", beat=True, FAKE_PAUSE=str(pause))  # the pause file exists: no pause now
    first = ExtractionRun.objects.get(session__external_id="s01")
    resumed = _wait_until(lambda: ExtractionRun.objects.get(pk=first.pk).attempts >= 2, RESUME_WITHIN + 60, "the patient to resume")
    resumed_after = time.monotonic() - killed_at
    _wait_until(lambda: not Session.objects.filter(patient=patient).exclude(pipeline_status="done").exists(), 120, "all sessions")
    print(f"resumed {resumed_after:.1f} s after the SIGKILL ({resumed:.1f} s after the survivor started)")
    assert resumed_after < RESUME_WITHIN
    assert Memory.objects.filter(patient=patient).count() == _patient_turns(patient) == 3  # nothing duplicated
    assert Finding.objects.filter(patient=patient).count() == 3
    assert ExtractionRun.objects.filter(session__patient=patient).count() == 3
    assert Upload.objects.get().status == Upload.Status.IMPORTED  # nothing lost


def _login(base: str, username: str) -> requests.Session:
    browser = requests.Session()
    browser.get(f"{base}/login/", timeout=30)
    response = browser.post(f"{base}/login/", data={"username": username, "password": PASSWORD,
                                                    "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                            headers={"Referer": f"{base}/login/"}, timeout=30, allow_redirects=False)
    assert response.status_code == 302, response.text[:500]
    return browser


def test_a_redis_outage_loses_no_upload_serves_every_page_and_the_pipeline_resumes_within_two_minutes(stack, patient, nurse, tmp_path):
    cache_env = {"TRANSCRIPT_API_RATE_LIMIT": "3", "TRANSCRIPT_API_RATE_WINDOW_SECONDS": "600"}
    base = stack.gunicorn(**cache_env)
    stack.worker("steady", beat=True)
    platform, token = platform_create(name="WellCoach")
    platform_enrol(platform=platform, patient=patient)
    api = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    sent: list[bytes] = []

    def post(body: bytes, *, chunked: bool = False) -> requests.Response:
        sent.append(body)
        data = (body[i:i + 97] for i in range(0, len(body), 97)) if chunked else body  # a generator: chunked encoding
        return requests.post(f"{base}/api/transcripts", data=data, headers=api, timeout=60)

    assert post(transcript_bytes(sessions=2, prefix="a")).status_code == 202
    _wait_until(lambda: Session.objects.filter(pipeline_status="done").count() == 2, 90, "the first upload to be processed")
    nurse_browser = _login(base, "nina")

    stack.redis_kill()  # broker and cache gone at once
    during = [post(transcript_bytes(sessions=2, prefix="b")), post(transcript_bytes(sessions=2, prefix="c"), chunked=True)]
    assert [r.status_code for r in during] == [202, 202], [r.text[:300] for r in during]
    limited = post(transcript_bytes(sessions=1, prefix="d"))
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0  # counted in the database
    queue = nurse_browser.get(f"{base}/triage/", timeout=30)
    assert queue.status_code == 200 and "Counts are unavailable for a moment" in queue.text
    health = requests.get(f"{base}/healthz", timeout=30)
    assert health.status_code == 503 and "broker" in health.json()["down"]
    assert Session.objects.filter(pipeline_status="pending").count() == 4  # stored, waiting for the broker

    stack.redis_start()  # Redis is back, empty: the messages that could not be sent never existed
    back_at = time.monotonic()
    resumed = _wait_until(lambda: not Session.objects.exclude(pipeline_status="done").exists(), RESUME_WITHIN, "the pipeline to catch up")
    print(f"pipeline caught up {resumed:.1f} s after Redis came back")

    uploads = list(Upload.objects.order_by("pk"))
    assert [bytes(u.raw) for u in uploads] == sent  # nothing lost, byte for byte, chunked included
    assert [u.status for u in uploads] == ["imported", "imported", "imported", "invalid"]
    assert uploads[3].rejection.startswith("too many uploads")
    assert Session.objects.count() == 6 and set(Session.objects.values_list("pipeline_status", flat=True)) == {"done"}
    assert Memory.objects.count() == _patient_turns(patient) == 6  # nothing duplicated
    assert Finding.objects.count() == 6
    assert time.monotonic() - back_at < RESUME_WITHIN + 5
    assert requests.get(f"{base}/triage/", timeout=30).status_code in (200, 302)
