"""Health probes: database, broker and worker heartbeat, and the report /healthz answers with."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

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


def _eager() -> bool:
    from config.celery_app import app

    return bool(app.conf.task_always_eager)


def check_broker() -> tuple[bool, str]:
    from config.celery_app import app

    if _eager():
        return True, "eager"
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True, "ok"
    except Exception as exc:  # noqa: BLE001
        return False, exc.__class__.__name__


def check_worker() -> tuple[bool, str]:
    from .models import WorkerHeartbeat

    if _eager():
        # Tasks run inside the web process: there is no worker to wait for.
        return True, "eager (tasks run in the web process)"
    latest = WorkerHeartbeat.objects.order_by("-seen_at").first()
    if latest is None:
        return False, "no heartbeat yet"
    age = timezone.now() - latest.seen_at
    return age <= HEARTBEAT_STALE_AFTER, f"last seen {int(age.total_seconds())}s ago"


@dataclass(frozen=True)
class HealthReport:
    """`ok` when everything answers; `fail` when the database or the broker is down (nothing can be
    stored or queued); `degraded` when only the worker is missing (pages work, nothing is processed)."""

    database: tuple[bool, str]
    broker: tuple[bool, str]
    worker: tuple[bool, str]

    @property
    def down(self) -> list[str]:
        return [name for name, (ok, _) in (("database", self.database), ("broker", self.broker), ("worker", self.worker)) if not ok]

    @property
    def status(self) -> str:
        down = self.down
        if not down:
            return "ok"
        return "degraded" if down == ["worker"] else "fail"

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "down": self.down,
            "database": self.database[1],
            "broker": self.broker[1],
            "worker": {"ok": self.worker[0], "detail": self.worker[1]},
        }


def health_report() -> HealthReport:
    database = check_database()
    return HealthReport(
        database=database,
        broker=check_broker(),
        worker=check_worker() if database[0] else (False, "unknown: database down"),
    )
