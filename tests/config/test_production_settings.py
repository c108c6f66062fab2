"""Production settings pass Django's deployment checks and refuse to start half-configured."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent.parent


def _check(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--settings=config.settings.production", "--fail-level", "WARNING"],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )


def test_deploy_check_reports_no_issues_with_the_required_environment():
    result = _check({
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "ALLOWED_HOSTS": "reconcile.example.org",
    })
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_sqlite():
    result = _check({
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "sqlite:////tmp/x.sqlite3",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
    })
    assert result.returncode != 0
    assert "DATABASE_URL must point at PostgreSQL" in result.stderr
