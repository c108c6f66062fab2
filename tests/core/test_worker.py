"""A task sent over Redis runs in a separate worker process and writes to PostgreSQL."""
from __future__ import annotations

import time

import pytest

from reconcile_app.core.models import WorkerHeartbeat
from reconcile_app.core.tasks import heartbeat_task

pytestmark = pytest.mark.services


def test_a_real_worker_runs_the_task_and_writes_to_the_database(celery_worker_process):
    WorkerHeartbeat.objects.all().delete()
    heartbeat_task.delay()
    deadline = time.monotonic() + 30
    row = None
    while time.monotonic() < deadline and row is None:
        row = WorkerHeartbeat.objects.filter(hostname__startswith="test-").first()
        time.sleep(0.2)
    assert row is not None, "the worker did not write its heartbeat"
    assert row.hostname.split("@")[0] == f"test-{__import__('os').getpid()}"
