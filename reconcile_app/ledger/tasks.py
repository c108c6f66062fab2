"""Ledger tasks: ids in, one service call; the patient's lease is taken inside the service."""
from __future__ import annotations

from celery import shared_task

from reconcile_app.core.exceptions import RetryableError


@shared_task(
    name="reconcile_app.ledger.tasks.record_reevaluate_task",
    autoretry_for=(RetryableError,),  # the patient's pipeline held the lease: try again shortly
    retry_backoff=5,
    retry_backoff_max=120,
    max_retries=10,
    acks_late=True,
    ignore_result=True,
)
def record_reevaluate_task(patient_id: int) -> None:
    from .services import record_reevaluate

    record_reevaluate(patient_id=patient_id)


@shared_task(name="reconcile_app.ledger.tasks.memories_expire_task", ignore_result=True)
def memories_expire_task() -> int:
    """Beat: evolving states past their time to live become outdated (safety facts never)."""
    from .services import memories_expire_due

    return memories_expire_due().memories
