"""`manage.py demo` as a user runs it: a real process whose own Celery worker fills the queue, and which
stops with an error when that worker dies."""
from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Start-up, seeding and the pipeline over the three demo patients take 20-60 s on the shared machine.
FINDINGS_WITHIN_SECONDS = 150


@dataclass
class Demo:
    process: subprocess.Popen
    base_url: str
    db_path: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def query(self, sql: str) -> list[tuple]:
        if not self.db_path.exists():
            return []
        with sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=5) as db:
            try:
                return db.execute(sql).fetchall()
            except sqlite3.OperationalError:  # tables not migrated yet, or a writer holds the lock
                return []

    def children(self) -> list[int]:
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(p) for p in path.read_text().split()] if path.exists() else []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def demo_environment(var_dir: Path, base_url: str) -> dict[str, str]:
    """The embedded defaults, whatever the test run points at (CI sets PostgreSQL and Redis)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")}
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.local", "RECONCILE_VAR_DIR": str(var_dir),
                "PUBLIC_BASE_URL": base_url, "PYTHONUNBUFFERED": "1"})
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


@pytest.fixture
def demo_process(tmp_path: Path) -> Iterator[Demo]:
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "demo.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--addr", f"127.0.0.1:{port}"],
        cwd=ROOT, env=demo_environment(tmp_path / "var", base_url), stdout=log, stderr=subprocess.STDOUT,
    )
    demo = Demo(process=process, base_url=base_url, db_path=tmp_path / "var" / "reconcile.sqlite3", log_path=log_path)
    try:
        yield demo
    finally:
        workers = demo.children()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # the demo stops its worker
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in workers:  # never leave a worker (or its beat process) behind, even if the demo was killed
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


def process_group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own local server
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_the_demo_worker_processes_the_transcripts_and_its_death_stops_the_demo(demo_process: Demo) -> None:
    deadline = time.monotonic() + FINDINGS_WITHIN_SECONDS
    findings = queued = 0
    while time.monotonic() < deadline and demo_process.process.poll() is None:
        findings = (demo_process.query("SELECT COUNT(*) FROM reconciliation_finding") or [(0,)])[0][0]
        # Routing follows the findings: wait for the nurse's queue itself.
        queued = (demo_process.query(
            "SELECT COUNT(*) FROM triage_triageitem WHERE status IN ('new', 'in_review', 'escalated')"
        ) or [(0,)])[0][0]
        if findings and queued:
            break
        time.sleep(1)
    assert demo_process.process.poll() is None, demo_process.log()
    assert findings > 0 and queued > 0, f"no queued findings within {FINDINGS_WITHIN_SECONDS} s:\n{demo_process.log()}"

    # Processed by the demo's own worker (local settings are not eager): its start-up heartbeat is there.
    workers = demo_process.query("SELECT hostname FROM core_workerheartbeat")
    assert [h for (h,) in workers if h.startswith(f"demo-{demo_process.process.pid}@")], workers
    status, health = _get_json(demo_process.base_url + "/healthz")
    assert (status, health["status"], health["down"]) == (200, "ok", []), (health, demo_process.log())

    # The worker dies: the demo must not carry on with a queue that never fills.
    children = demo_process.children()
    assert len(children) == 1, children  # the worker (solo pool, embedded beat)
    worker = children[0]
    os.kill(worker, signal.SIGKILL)
    code = demo_process.process.wait(timeout=30)
    assert code != 0
    assert "The Celery worker exited unexpectedly" in demo_process.log(), demo_process.log()
    assert process_group_members(worker) == []  # its embedded beat went with it


def _wait_for_log(demo: Demo, text: str, seconds: float = FINDINGS_WITHIN_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and demo.process.poll() is None and text not in demo.log():
        time.sleep(0.5)
    assert text in demo.log(), demo.log()


def test_stopping_the_demo_stops_its_worker_and_beat(demo_process: Demo) -> None:
    _wait_for_log(demo_process, "demo ready")
    (worker,) = demo_process.children()
    demo_process.process.send_signal(signal.SIGTERM)
    assert demo_process.process.wait(timeout=30) == 0, demo_process.log()
    deadline = time.monotonic() + 10
    while process_group_members(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process_group_members(worker) == []


def test_a_busy_address_is_refused_before_any_worker_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "manage.py", "demo", "--addr", f"127.0.0.1:{port}"], cwd=ROOT, capture_output=True, text=True,
            env=demo_environment(tmp_path / "var", f"http://127.0.0.1:{port}"), timeout=120,
        )
    assert result.returncode != 0
    assert f"Cannot listen on 127.0.0.1:{port}" in result.stderr
    assert not list((tmp_path / "var").glob("celerybeat-schedule*"))  # no worker was started
