"""Celery tasks of the narrative pipeline: ids in, one service call, retries only for RetryableError."""
from __future__ import annotations

import uuid

from celery import shared_task

from reconcile_app.core.exceptions import RetryableError


@shared_task(
    bind=True,
    name="reconcile_app.transcripts.tasks.pipeline_patient_advance_task",
    acks_late=True,  # redelivered after a lost worker; safe because every step is idempotent
    reject_on_worker_lost=True,
    autoretry_for=(RetryableError,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=5,
    ignore_result=True,
)
def pipeline_patient_advance_task(self, patient_id: int) -> str:  # type: ignore[no-untyped-def]
    from reconcile_app.pipeline import Outcome, pipeline_enqueue, pipeline_patient_advance

    # The task id is the lease token: a redelivered or retried message reclaims its own lease.
    token = self.request.id or uuid.uuid4().hex
    outcome = pipeline_patient_advance(patient_id=patient_id, token=token, final_attempt=self.request.retries >= self.max_retries)
    if outcome == Outcome.MORE:
        pipeline_enqueue(patient_id=patient_id)
    return str(outcome)


@shared_task(name="reconcile_app.transcripts.tasks.pipeline_sweep_task", ignore_result=True)
def pipeline_sweep_task() -> int:
    """Beat safety net: pending work whose message was lost (broker outage) is enqueued again."""
    from reconcile_app.pipeline import pipeline_sweep

    return pipeline_sweep()

