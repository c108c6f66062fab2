"""Triage tasks: the SLA sweep, clarification delivery and write-back (ids in, one service call)."""
from __future__ import annotations

from celery import shared_task

from reconcile_app.core.exceptions import PermanentError, RetryableError

MAX_RETRIES = 5


def _backoff(retries: int) -> int:
    return min(30 * 2**retries, 3600)


@shared_task(name="reconcile_app.triage.tasks.sla_escalate_task")
def sla_escalate_task() -> int:
    from .services import sla_breaches_escalate

    return sla_breaches_escalate()


@shared_task(bind=True, max_retries=MAX_RETRIES)
def clarification_send_task(self, item_id: int) -> None:  # type: ignore[no-untyped-def]
    from .services import clarification_give_up, clarification_send

    try:
        clarification_send(item_id=item_id)
    except RetryableError as exc:
        if self.request.retries >= self.max_retries:
            clarification_give_up(item_id=item_id, message=f"gave up after {self.request.retries + 1} tries: {exc.message}")
            return
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries))
    except PermanentError:  # already recorded on the item; a retry cannot help
        return


@shared_task(bind=True, max_retries=MAX_RETRIES)
def writeback_send_task(self, writeback_id: int) -> None:  # type: ignore[no-untyped-def]
    from .services import writeback_give_up, writeback_send

    try:
        writeback_send(writeback_id=writeback_id)
    except RetryableError as exc:
        if self.request.retries >= self.max_retries:
            writeback_give_up(writeback_id=writeback_id, message=f"gave up after {self.request.retries + 1} tries: {exc.message}")
            return
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries))
    except PermanentError:  # recorded as FAILED on the write-back row
        return
