"""Shared fixtures: the three personas, the dev dataset, and the real services (worker, browser)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

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
