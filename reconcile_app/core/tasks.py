"""Worker heartbeat, written on start and by beat every minute."""
from __future__ import annotations

import socket

from celery import shared_task
from celery.signals import worker_ready
from django.utils import timezone


def heartbeat_touch(hostname: str) -> None:
    from .models import WorkerHeartbeat

    WorkerHeartbeat.objects.update_or_create(hostname=hostname[:200], defaults={"seen_at": timezone.now()})


@shared_task(bind=True, name="reconcile_app.core.tasks.heartbeat_task", ignore_result=True)
def heartbeat_task(self) -> None:  # type: ignore[no-untyped-def]
    # The worker's node name (name@host), so /healthz can tell workers apart.
    heartbeat_touch(self.request.hostname or socket.gethostname())


@worker_ready.connect
def _on_worker_ready(sender=None, **kwargs) -> None:  # type: ignore[no-untyped-def]
    heartbeat_touch(getattr(sender, "hostname", None) or socket.gethostname())
