"""Shared fixtures: the three personas, the dev dataset, and the real services (worker, browser)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.contrib.auth.models import User

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
DEV_SET = ROOT.parent / "shared" / "eval" / "dev"
PASSWORD = "correct horse battery staple"

# In CI (.ci/run sets REQUIRE_SERVICES=1) a missing service fails the test instead of skipping it.
REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


def xdist_broker_url(url: str, worker: str) -> str:
    """The Redis broker database of one pytest-xdist worker: gw0 keeps the configured one, gw1 the one
    below it, and so on. Each worker's Celery workers consume only their own test database's tasks
    (and `purge()` empties only its own queue), as pytest-django gives each worker its own database."""
    if not (worker.startswith("gw") and url.startswith("redis://")):
        return url
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(db - int(worker[2:])) % 16}"))  # Redis has 16 databases by default


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = os.environ.get("CELERY_BROKER_URL", "")
    if worker and url:
        # Celery reads CELERY_BROKER_URL from the environment before its settings, on every access; the
        # worker processes the tests start inherit it. No connection exists yet at configure time.
        os.environ["CELERY_BROKER_URL"] = xdist_broker_url(url, worker)


# Tests that mostly wait on another process: the LLM server generating (minutes on one CPU), real
# workers, a demo, browsers, the medplum server. Under pytest-xdist they start first, so their waiting
# overlaps the CPU-bound rest instead of ending the run alone; the LLM tests, the longest chain, first of all.
WAITING_MARKERS = ("llm", "services", "browser", "node")
WAITING_FIXTURES = frozenset({"demo_process", "celery_worker_process", "medplum_server", "live_server"})


def _database_kind(item: pytest.Item) -> int:
    """pytest-django's order (Django's): database tests in a transaction (0), then transactional ones
    (1), whose flush empties the tables data migrations filled, then the rest (2)."""
    from django.test import TestCase, TransactionTestCase

    cls = getattr(item, "cls", None)
    if cls is not None and issubclass(cls, TransactionTestCase):
        return 0 if issubclass(cls, TestCase) else 1
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    transactional = marker is not None and bool(
        marker.kwargs.get("transaction", marker.args[0] if marker.args else False) or marker.kwargs.get("reset_sequences"))
    if transactional or "transactional_db" in fixtures or "live_server" in fixtures:
        return 1
    return 0 if marker is not None or "db" in fixtures else 2


def _waiting_rank(item: pytest.Item) -> int:
    if item.get_closest_marker("llm"):
        return 0
    if any(item.get_closest_marker(m) for m in WAITING_MARKERS) or WAITING_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return 1
    return 2


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the waiting tests first within each of pytest-django's groups, which it
    sorted before this hook runs (it is tryfirst). A run in one process keeps pytest-django's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    kinds = [_database_kind(item) for item in items]
    if kinds != sorted(kinds):
        return  # a test this module classifies unlike pytest-django: never move it across its groups
    ranks = {id(item): _waiting_rank(item) for item in items}
    items[:] = [item for _, item in sorted(zip(kinds, items), key=lambda pair: (pair[0], ranks[id(pair[1])]))]


def need(condition: bool, reason: str) -> None:
    """Skip when a real service is missing, unless CI requires it, where it fails."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


@pytest.fixture
def clinician(db: None) -> User:
    return user_create(username="carla", role=Role.CLINICIAN, password=PASSWORD, full_name="Carla Clinician")


@pytest.fixture
def nurse(db: None) -> User:
    return user_create(username="nina", role=Role.NURSE, password=PASSWORD, full_name="Nina Nurse")


@pytest.fixture
def admin_user(db: None) -> User:
    return user_create(username="ada", role=Role.ADMIN, password=PASSWORD, full_name="Ada Admin")


@pytest.fixture
def nurse_client(client, nurse):  # type: ignore[no-untyped-def]
    client.force_login(nurse)
    return client


@pytest.fixture
def admin_client(client, admin_user):  # type: ignore[no-untyped-def]
    client.force_login(admin_user)
    return client


@pytest.fixture
def clinician_client(client, clinician):  # type: ignore[no-untyped-def]
    client.force_login(clinician)
    return client


@pytest.fixture(scope="session")
def dev_set() -> Path:
    need(DEV_SET.is_dir(), f"dev dataset not found at {DEV_SET}")
    return DEV_SET


def _broker_is_real() -> bool:
    url = os.environ.get("CELERY_BROKER_URL", "")
    return url.startswith("redis://")


@pytest.fixture
def celery_worker_process(transactional_db: None, settings) -> Iterator[subprocess.Popen]:  # type: ignore[no-untyped-def]
    """A real Celery worker in a separate process, on Redis, writing to the test database."""
    from django.db import connection

    need(_broker_is_real(), "CELERY_BROKER_URL (redis://) not set")
    need(connection.vendor == "postgresql", "DATABASE_URL (PostgreSQL) not set")
    from config.celery_app import app

    app.control.purge()
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    env["DB_CONN_MAX_AGE"] = "0"
    (ROOT / "var").mkdir(exist_ok=True)
    log = open(ROOT / "var" / "test-worker.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork", "--concurrency=2",
         "--loglevel=INFO", "--without-gossip", "--without-mingle", "-n", f"test-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if any(f"test-{os.getpid()}@" in name for reply in replies for name in reply):
            break
        if proc.poll() is not None:
            pytest.fail("celery worker exited during start-up; see var/test-worker.log")
    else:
        proc.terminate()
        pytest.fail("celery worker did not answer a ping within 60 s")
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    # Debian's build, never one a tool downloaded (a `chromium` earlier on PATH may be a Playwright download)
    path = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else (shutil.which("chromium") or "/usr/bin/chromium")
    need(Path(path).exists(), "Debian chromium not installed (apt-get install -y chromium)")
    return path
