"""SMART test fixtures: the sandbox EHR over live HTTP."""
from tests.smart.sandbox_env import browser, eager_celery, sandbox_ehr, sandbox_iss  # noqa: F401
