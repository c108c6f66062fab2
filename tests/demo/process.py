"""`manage.py demo` as a real process for tests: on a free port, with its own var/ (SQLite, file-system
broker), whatever services the test run points at."""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Start-up, seeding and the pipeline over the three demo patients: 3-10 s here, far more on a loaded machine.
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


def free_port() -> int:
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


def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database migrated by `manage.py migrate` with the demo's settings, made once per test
    run (under pytest-xdist once for all workers, in their shared base directory): each demo copies it, so its
    own migrate finds nothing to apply (~5 CPU-s less per demo). Migrating from empty is still what made it."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "demo-migrated"
    folder.mkdir(exist_ok=True)
    template = folder / "reconcile.sqlite3"
    with open(folder / "lock", "w") as lock:  # the other workers wait for the first one's migration
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            var = folder / "var"
            var.mkdir(exist_ok=True)
            done = subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, capture_output=True,
                                  text=True, env=demo_environment(var, "http://127.0.0.1:8000"), timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
            assert not (var / "reconcile.sqlite3-wal").exists()  # the last connection checkpointed: one file holds it all
            (var / "reconcile.sqlite3").rename(template)
    return template


@pytest.fixture
def demo_process(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    (tmp_path / "var").mkdir()
    shutil.copyfile(migrated_template(tmp_path_factory), tmp_path / "var" / "reconcile.sqlite3")
    port = free_port()
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




def wait_for_queue(demo: Demo, *, seconds: float = FINDINGS_WITHIN_SECONDS) -> tuple[int, int]:
    """Wait until the demo's worker has made findings and routed them to the nurse's queue: (findings, queued)."""
    deadline = time.monotonic() + seconds
    findings = queued = 0
    while time.monotonic() < deadline and demo.process.poll() is None:
        findings = (demo.query("SELECT COUNT(*) FROM reconciliation_finding") or [(0,)])[0][0]
        # Routing follows the findings: wait for the queue itself.
        queued = (demo.query(
            "SELECT COUNT(*) FROM triage_triageitem WHERE status IN ('new', 'in_review', 'escalated')"
        ) or [(0,)])[0][0]
        if findings and queued:
            break
        time.sleep(1)
    return findings, queued


def wait_for_log(demo: Demo, text: str, seconds: float = FINDINGS_WITHIN_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and demo.process.poll() is None and text not in demo.log():
        time.sleep(0.5)
    assert text in demo.log(), demo.log()
