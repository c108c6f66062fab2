"""Bookkeeping shared by engine runs (extraction, reconciliation): claim, fail, with conditional updates."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from .exceptions import PermanentError


def run_mark_running(run: Any) -> None:
    """Count the attempt and clear the last error; a redelivered run is simply run again."""
    type(run).objects.filter(pk=run.pk).update(
        status="running", attempts=run.attempts + 1, started_at=timezone.now(), error=""
    )


def run_mark_failed(run: Any, exc: PermanentError) -> None:
    """A permanent failure keeps its message (never clinical text) for the retry button to show."""
    type(run).objects.filter(pk=run.pk).update(status="failed", error=exc.message[:300], retryable=False)
