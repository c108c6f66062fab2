"""Celery app for the worker tests: the project's app, with the fake engines in every worker process.

Environment: FAKE_LOG (append one JSON line per extraction), FAKE_SLEEP (seconds per extraction),
FAKE_PAUSE (write the pid there on the first extraction, then sleep to be killed),
PIPELINE_BUDGET (seconds a task may spend before handing the patient to a new message),
VISIBILITY_TIMEOUT (Redis: seconds before an unacknowledged message of a dead worker is redelivered;
the default is an hour, far too long for a test), PIPELINE_SWEEP_SECONDS (the beat's pipeline sweep
interval; the product's 30 s would make a recovery test wait on it).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery.signals import worker_process_init

from config.celery_app import app

__all__ = ["app"]

if os.environ.get("VISIBILITY_TIMEOUT"):
    # kombu scans for such messages every unacked_restore_interval x unacked_restore_throttle
    # seconds (10 x 10 by default): scan every second here.
    app.conf.broker_transport_options = {
        **(app.conf.broker_transport_options or {}),
        "visibility_timeout": float(os.environ["VISIBILITY_TIMEOUT"]),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    }

if os.environ.get("PIPELINE_SWEEP_SECONDS"):
    # Read by the embedded beat (-B) when it starts: the product's entry, on a shorter interval.
    app.conf.beat_schedule = {
        **app.conf.beat_schedule,
        "pipeline-sweep": {**app.conf.beat_schedule["pipeline-sweep"], "schedule": float(os.environ["PIPELINE_SWEEP_SECONDS"])},
    }


@worker_process_init.connect
def _install_fakes(**kwargs: Any) -> None:
    from django.conf import settings

    from tests.transcripts.fakes import install_fakes

    extractor, _ = install_fakes()
    if os.environ.get("FAKE_LOG"):
        extractor.log_path = Path(os.environ["FAKE_LOG"])
    if os.environ.get("FAKE_SLEEP"):
        extractor.sleep = float(os.environ["FAKE_SLEEP"])
    if os.environ.get("FAKE_PAUSE"):
        extractor.pause_first_call = Path(os.environ["FAKE_PAUSE"])
    if os.environ.get("PIPELINE_BUDGET"):
        settings.PIPELINE_TASK_BUDGET_SECONDS = float(os.environ["PIPELINE_BUDGET"])
