"""A new record version queues the re-evaluation of the findings it may touch, once it is committed."""
from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from reconcile_app.fhir.signals import record_changed


@receiver(record_changed, dispatch_uid="ledger-record-changed")
def _on_record_changed(sender: Any, *, patient_id: int, snapshot_id: int, previous_id: int | None, **kwargs: Any) -> None:
    if previous_id is None:
        return  # a first version: nothing was made against an earlier one
    from .tasks import record_reevaluate_task

    record_reevaluate_task.delay_on_commit(patient_id)
