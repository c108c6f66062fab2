"""Fixtures of the LLM tests: the scripted endpoint, and the local llama.cpp server when CI started one."""
from __future__ import annotations

import os
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import need

from .fakes import FakeEndpoint


@pytest.fixture
def endpoint() -> FakeEndpoint:
    return FakeEndpoint()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """Running, not a zombie its parent has yet to reap."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="session")
def llm_base_url() -> str:
    """The real local OpenAI-compatible server (.ci/llm-server prints LLM_TEST_BASE_URL for CI).

    `.ci/run` starts the tests while .ci/llm-server is still installing and loading the model, giving
    its pid (LLM_SERVER_SETUP_PID) and a bound (LLM_TEST_WAIT_SECONDS): the first LLM test waits for
    the server, and fails at once if the set-up ended without one."""
    url = os.environ.get("LLM_TEST_BASE_URL", "")
    need(bool(url), "LLM_TEST_BASE_URL not set (start one with .ci/llm-server)")
    setup_pid = int(os.environ.get("LLM_SERVER_SETUP_PID") or 0)
    deadline = time.monotonic() + float(os.environ.get("LLM_TEST_WAIT_SECONDS") or 0)
    while not _answers(url):
        if not setup_pid or time.monotonic() > deadline:
            break  # nothing to wait for: the tests report the unreachable server themselves
        if not _alive(setup_pid):
            if _answers(url):
                break
            pytest.fail(f"the LLM server set-up (pid {setup_pid}) ended without a server at {url}; see var/ci/llm-server.log")
        time.sleep(1)
    return url
