"""Health probes: database, broker and worker heartbeat."""
from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.utils import timezone

HEARTBEAT_STALE_AFTER = timedelta(minutes=3)


def check_database() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True, "ok"
    except Exception as exc:  # noqa: BLE001 - a probe reports, it does not raise
        return False, exc.__class__.__name__


def check_broker() -> tuple[bool, str]:
    from config.celery_app import app

    if app.conf.task_always_eager:
        return True, "eager"
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True, "ok"
    except Exception as exc:  # noqa: BLE001
        return False, exc.__class__.__name__


def check_worker() -> tuple[bool, str]:
    from .models import WorkerHeartbeat

    latest = WorkerHeartbeat.objects.order_by("-seen_at").first()
    if latest is None:
        return False, "no heartbeat yet"
    age = timezone.now() - latest.seen_at
    return age <= HEARTBEAT_STALE_AFTER, f"last seen {int(age.total_seconds())}s ago"
