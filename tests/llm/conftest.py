"""Fixtures of the LLM tests: the scripted endpoint, and the local llama.cpp server when CI started one."""
from __future__ import annotations

import os

import pytest

from tests.conftest import need

from .fakes import FakeEndpoint


@pytest.fixture
def endpoint() -> FakeEndpoint:
    return FakeEndpoint()


@pytest.fixture(scope="session")
def llm_base_url() -> str:
    """The real local OpenAI-compatible server (.ci/llm-server prints LLM_TEST_BASE_URL for CI)."""
    url = os.environ.get("LLM_TEST_BASE_URL", "")
    need(bool(url), "LLM_TEST_BASE_URL not set (start one with .ci/llm-server)")
    return url
