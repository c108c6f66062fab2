"""SMART test fixtures: the sandbox EHR over live HTTP."""
from tests.smart.sandbox_env import browser, sandbox_ehr, sandbox_iss  # noqa: F401
