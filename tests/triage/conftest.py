"""Triage fixtures: Celery runs tasks in-process here (these tests are about triage, not the broker;
the worker path is covered by the pipeline's `services` tests)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _eager_tasks() -> Iterator[None]:
    from config.celery_app import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = old


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Facet counts are cached; a test must never see counts cached by an earlier one."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def eager_retries(_eager_tasks: None) -> Iterator[None]:
    """Eager tasks re-run their retries in place only when errors do not propagate (as on a worker)."""
    from config.celery_app import app

    old = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    try:
        yield
    finally:
        app.conf.task_eager_propagates = old
