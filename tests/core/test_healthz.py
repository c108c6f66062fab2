"""/healthz reports database, broker and worker heartbeat, and answers 503 naming what is down."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.core.models import WorkerHeartbeat

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_broker(monkeypatch):  # type: ignore[no-untyped-def]
    """As in production: tasks go to a broker and need a worker (the test settings run them eagerly)."""
    monkeypatch.setattr("reconcile_app.core.health._eager", lambda: False)
    monkeypatch.setattr("reconcile_app.core.health.check_broker", lambda: (True, "ok"))


def test_eager_tasks_need_no_worker(client, monkeypatch):
    monkeypatch.setattr("reconcile_app.core.health._eager", lambda: True)
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "ok" and body["down"] == []
    assert body["database"] == "ok"
    assert body["worker"]["ok"] is True and body["worker"]["detail"].startswith("eager")


def test_a_missing_worker_heartbeat_is_degraded_and_503(client, with_broker):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "degraded"
    assert body["down"] == ["worker"]
    assert body["worker"] == {"ok": False, "detail": "no heartbeat yet"}


def test_a_fresh_worker_heartbeat_is_ok(client, with_broker):
    WorkerHeartbeat.objects.create(hostname="w1@host", seen_at=timezone.now() - timedelta(seconds=5))
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["worker"]["ok"] is True


def test_a_stale_heartbeat_is_degraded(client, with_broker):
    WorkerHeartbeat.objects.create(hostname="w1@host", seen_at=timezone.now() - timedelta(minutes=10))
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "degraded"
    assert response.json()["worker"] == {"ok": False, "detail": "last seen 600s ago"}


def test_an_unreachable_broker_fails_and_is_named(client, monkeypatch):
    monkeypatch.setattr("reconcile_app.core.health.check_broker", lambda: (False, "OperationalError"))
    monkeypatch.setattr("reconcile_app.core.health.check_worker", lambda: (True, "last seen 5s ago"))
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["down"] == ["broker"]
    assert body["broker"] == "OperationalError"
