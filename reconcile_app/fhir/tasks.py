"""Celery tasks of the clinical stream: ids in, one service call."""
from __future__ import annotations

from celery import shared_task

from reconcile_app.core.exceptions import RetryableError


@shared_task(
    bind=True,
    name="reconcile_app.fhir.tasks.record_pull_task",
    autoretry_for=(RetryableError,),
    retry_backoff=True,
    max_retries=5,
    ignore_result=True,
)
def record_pull_task(self, patient_id: int, launch_id: int | None = None, pull_id: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """Pull with the user's launch when given (and still alive), else with Backend Services."""
    from reconcile_app.smart.models import SmartLaunch

    from .models import Patient
    from .services import record_pull

    patient = Patient.objects.select_related("registration").get(pk=patient_id)
    launch = SmartLaunch.objects.select_related("registration").filter(pk=launch_id).first() if launch_id else None
    if launch is not None and launch.status != SmartLaunch.Status.ACTIVE:
        launch = None  # the user has gone; Backend Services takes over
    pull = record_pull(patient=patient, launch=launch, pull_id=pull_id)
    # Eager (in-process) runs block a request: the failure is recorded and shown, not retried inline.
    if pull.status == pull.Status.FAILED and pull.retryable and not self.request.is_eager:
        raise RetryableError(pull.error)


@shared_task(name="reconcile_app.fhir.tasks.records_refresh_task", ignore_result=True)
def records_refresh_task() -> int:
    """Beat: refresh records through Backend Services on a schedule (launches refresh on their own)."""
    from .services import records_refresh_due

    return records_refresh_due()
