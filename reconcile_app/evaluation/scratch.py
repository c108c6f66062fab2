"""A throw-away SQLite database for replay and evaluation, swapped in for `default` and swapped back."""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.management import call_command
from django.db import connections


@contextmanager
def scratch_database(path: Path | None = None) -> Iterator[Path]:
    """Point the `default` alias at a fresh, migrated SQLite file; the app's own data is never touched.

    The previous connection object is put back afterwards (not reopened), so a caller inside a
    transaction, such as a test, finds it exactly as it left it.
    """
    tmpdir = None
    if path is None:
        tmpdir = tempfile.mkdtemp(prefix="reconcile-scratch-")
        path = Path(tmpdir) / "scratch.sqlite3"
    elif path.exists():
        path.unlink()
    previous_settings = connections.settings["default"]
    previous_conn = getattr(connections._connections, "default", None)
    scratch = connections.configure_settings(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path),
                     # A scratch file needs no durability: skipping fsync makes replay several times faster.
                     "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"}}}
    )["default"]
    connections.settings["default"] = scratch
    connections["default"] = connections.create_connection("default")
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield path
    finally:
        connections["default"].close()
        connections.settings["default"] = previous_settings
        if previous_conn is not None:
            connections["default"] = previous_conn
        else:
            del connections["default"]
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


@contextmanager
def celery_in_process() -> Iterator[None]:
    """Tasks enqueued by the services (clarifications, write-backs) run here, against the scratch
    database, instead of leaving messages on a real broker for a worker on the app's database."""
    from config.celery_app import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = previous


@contextmanager
def quiet_logs(level: int) -> Iterator[None]:
    """Per-run INFO lines would tear the progress bars; warnings still show."""
    import logging

    loggers = [logging.getLogger(name) for name in ("reconcile_app", "celery", "kombu")]
    previous = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(level)
    try:
        yield
    finally:
        for lg, old in zip(loggers, previous):
            lg.setLevel(old)
