"""/healthz reports database, broker and worker heartbeat."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.core.models import WorkerHeartbeat

pytestmark = pytest.mark.django_db


def test_it_reports_each_component(client):
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["worker"] == {"ok": False, "detail": "no heartbeat yet"}


def test_it_reports_a_fresh_worker_heartbeat(client):
    WorkerHeartbeat.objects.create(hostname="w1@host", seen_at=timezone.now() - timedelta(seconds=5))
    assert client.get("/healthz").json()["worker"]["ok"] is True


def test_a_stale_heartbeat_is_not_ok(client):
    WorkerHeartbeat.objects.create(hostname="w1@host", seen_at=timezone.now() - timedelta(minutes=10))
    assert client.get("/healthz").json()["worker"]["ok"] is False


def test_it_fails_when_the_broker_is_unreachable(client, monkeypatch):
    monkeypatch.setattr("reconcile_app.core.views.check_broker", lambda: (False, "OperationalError"))
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"] == "OperationalError"
