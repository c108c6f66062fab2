"""Triage fixtures: eager Celery that retries in place like a worker."""
from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def eager_retries() -> Iterator[None]:
    """Eager tasks re-run their retries in place only when errors do not propagate (as on a worker)."""
    from config.celery_app import app

    old = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    try:
        yield
    finally:
        app.conf.task_eager_propagates = old
