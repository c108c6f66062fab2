"""A throw-away SQLite database for replay and evaluation, swapped in for `default` and swapped back."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management import call_command
from django.db import connections


def _migrations_digest() -> str:
    """Changes whenever any app's migrations change, so a stale template is never reused."""
    digest = hashlib.sha256()
    for config in sorted(apps.get_app_configs(), key=lambda c: c.label):
        folder = Path(config.path) / "migrations"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            digest.update(f"{config.label}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def _default_alias_on(path: Path) -> Iterator[None]:
    """Point the `default` alias at a SQLite file; the previous connection object is put back
    afterwards (not reopened), so a caller inside a transaction, such as a test, finds it as it was."""
    previous_settings = connections.settings["default"]
    previous_conn = getattr(connections._connections, "default", None)
    scratch = connections.configure_settings(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path),
                     # A scratch file needs no durability: skipping fsync makes replay several times faster.
                     "OPTIONS": {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"}}}
    )["default"]
    connections.settings["default"] = scratch
    connections["default"] = connection = connections.create_connection("default")
    # No debug cursor for DEBUG alone: it formats every statement for connection.queries, which on SQLite costs
    # one more query per statement to quote its parameters, and nothing reads that log here. A caller that asks
    # for the log (force_debug_cursor: a test counting queries) still gets it.
    debug_cursor = connection.make_debug_cursor
    connection.make_debug_cursor = lambda cursor: (  # type: ignore[method-assign]
        debug_cursor(cursor) if connection.force_debug_cursor else connection.make_cursor(cursor))
    try:
        yield
    finally:
        connections["default"].close()
        connections.settings["default"] = previous_settings
        if previous_conn is not None:
            connections["default"] = previous_conn
        else:
            del connections["default"]


def _migrated_template() -> Path:
    """A migrated empty database, built once per set of migrations and copied for each run:
    migrating from scratch costs seconds every time, a copy costs milliseconds."""
    template = Path(tempfile.gettempdir()) / f"reconcile-scratch-template-{_migrations_digest()}.sqlite3"
    if not template.exists():
        building = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        with _default_alias_on(building):
            call_command("migrate", verbosity=0, interactive=False)
        os.replace(building, template)  # atomic: a concurrent run sees either nothing or a whole file
    return template


@contextmanager
def scratch_database(path: Path | None = None) -> Iterator[Path]:
    """Run the body against a fresh, migrated SQLite file; the app's own data is never touched."""
    tmpdir = None
    if path is None:
        tmpdir = tempfile.mkdtemp(prefix="reconcile-scratch-")
        path = Path(tmpdir) / "scratch.sqlite3"
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    shutil.copyfile(_migrated_template(), path)
    try:
        with _default_alias_on(path):
            yield path
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _drop_producer_pools(app: Any) -> None:
    # Celery binds the broker URL into its producer pools on first use (as after a fork, drop them).
    app._pool = None
    if "amqp" in app.__dict__:
        app.amqp._producer_pool = None


@contextmanager
def celery_in_process() -> Iterator[None]:
    """Tasks enqueued by the services (clarifications, write-backs) run here, against the scratch
    database. Eager tasks still pass through a producer, so the broker is also swapped for the
    in-memory transport: no message reaches a real broker, no network is needed."""
    from config.celery_app import app

    # broker_url itself yields to a CELERY_BROKER_URL environment variable; the write and read URLs
    # are consulted first (unless set in the environment too, which replay does not expect).
    keys = ("task_always_eager", "broker_write_url", "broker_read_url")
    previous = {key: app.conf.get(key) for key in keys}
    app.conf.task_always_eager = True
    app.conf.broker_write_url = app.conf.broker_read_url = "memory://"
    _drop_producer_pools(app)
    try:
        yield
    finally:
        for key, value in previous.items():
            setattr(app.conf, key, value)
        _drop_producer_pools(app)


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
