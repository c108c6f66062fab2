"""Periodic transcripts housekeeping: every upload reaches a terminal status."""
from __future__ import annotations

from celery import shared_task


@shared_task(name="reconcile_app.transcripts.tasks.uploads_fail_stuck_task", ignore_result=True)
def uploads_fail_stuck_task() -> int:
    from .services import uploads_fail_stuck

    return uploads_fail_stuck()
