"""`manage.py demo` as a user runs it: a real process whose own Celery worker fills the queue, and which
stops with an error when that worker dies."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import ROOT

from .process import FINDINGS_WITHIN_SECONDS, Demo, demo_environment, demo_process, process_group_members, wait_for_log, wait_for_queue  # noqa: F401


def _get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own local server
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_the_demo_worker_processes_the_transcripts_and_its_death_stops_the_demo(demo_process: Demo) -> None:
    findings, queued = wait_for_queue(demo_process)
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


def test_stopping_the_demo_stops_its_worker_and_beat(demo_process: Demo) -> None:
    wait_for_log(demo_process, "demo ready")
    (worker,) = demo_process.children()
    demo_process.process.send_signal(signal.SIGTERM)
    assert demo_process.process.wait(timeout=30) == 0, demo_process.log()
    deadline = time.monotonic() + 10
    while process_group_members(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process_group_members(worker) == []


def test_a_busy_address_is_refused_before_migrating_or_starting_a_worker(tmp_path: Path) -> None:
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
    assert not (tmp_path / "var" / "reconcile.sqlite3").exists()  # refused before migrating anything
