"""Triage tasks: the SLA sweep, clarification delivery, write-back and its retraction (ids in, one service call)."""
from __future__ import annotations

from collections.abc import Callable

from celery import shared_task

from reconcile_app.core.exceptions import PermanentError, RetryableError

MAX_RETRIES = 5


def _backoff(retries: int) -> int:
    return min(30 * 2**retries, 3600)


def _send_or_retry(task, send: Callable[[], None], give_up: Callable[[str], None]) -> None:  # type: ignore[no-untyped-def]
    """Retry a RetryableError with backoff, then give up visibly; a PermanentError is already recorded."""
    try:
        send()
    except RetryableError as exc:
        if task.request.retries >= task.max_retries:
            give_up(f"gave up after {task.request.retries + 1} tries: {exc.message}")
            return
        raise task.retry(exc=exc, countdown=_backoff(task.request.retries))
    except PermanentError:  # recorded on the item or write-back row; a retry cannot help
        return


@shared_task(name="reconcile_app.triage.tasks.sla_escalate_task")
def sla_escalate_task() -> int:
    from .services import sla_breaches_escalate

    return sla_breaches_escalate()


@shared_task(bind=True, max_retries=MAX_RETRIES)
def clarification_send_task(self, item_id: int) -> None:  # type: ignore[no-untyped-def]
    from .services import clarification_give_up, clarification_send

    _send_or_retry(
        self,
        lambda: clarification_send(item_id=item_id),
        lambda message: clarification_give_up(item_id=item_id, message=message),
    )


@shared_task(bind=True, max_retries=MAX_RETRIES)
def writeback_send_task(self, writeback_id: int) -> None:  # type: ignore[no-untyped-def]
    from .services import writeback_give_up, writeback_send

    _send_or_retry(
        self,
        lambda: writeback_send(writeback_id=writeback_id),
        lambda message: writeback_give_up(writeback_id=writeback_id, message=message),
    )


@shared_task(bind=True, max_retries=MAX_RETRIES)
def retraction_send_task(self, retraction_id: int) -> None:  # type: ignore[no-untyped-def]
    from .services import retraction_give_up, retraction_send

    _send_or_retry(
        self,
        lambda: retraction_send(retraction_id=retraction_id),
        lambda message: retraction_give_up(retraction_id=retraction_id, message=message),
    )
