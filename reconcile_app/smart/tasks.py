"""Periodic SMART housekeeping: abandoned launches lose their PKCE state."""
from __future__ import annotations

from celery import shared_task


@shared_task(name="reconcile_app.smart.tasks.launches_expire_abandoned_task", ignore_result=True)
def launches_expire_abandoned_task() -> int:
    from .services import launches_expire_abandoned

    return launches_expire_abandoned()
