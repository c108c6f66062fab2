"""pytest fixture `medplum_server`: @medplum/fhir-router behind server.mjs, loaded with the large patient.

Use it with `from tests.fhir_server.fixtures import medplum_server  # noqa: F401` and `@pytest.mark.node`.
It yields `(base_url, patient_id)`; the server accepts any bearer token and listens on 127.0.0.1 only.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.conftest import need

HERE = Path(__file__).resolve().parent
LARGE_PATIENT = HERE.parent / "data" / "fhir" / "large_patient.json"
LARGE_PATIENT_ID = "pt-large-harlan-voss"
START_TIMEOUT_SECONDS = 60
LOG = HERE.parent.parent / "var" / "medplum-server.log"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _node_modules_ready() -> bool:
    return (HERE / "node_modules" / "@medplum" / "fhir-router").is_dir()


def _install() -> None:
    """`.ci/run` runs `npm ci` before the suite; where services are required (CI) a missing install is
    repaired here, failing clearly. A plain `./dev test` never reaches for the npm registry: the Node
    tests skip until someone runs `npm ci` in tests/fhir_server."""
    if _node_modules_ready() or not shutil.which("npm") or os.environ.get("REQUIRE_SERVICES") != "1":
        return
    result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                            capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        pytest.fail(f"npm ci failed in {HERE}: {result.stderr.strip()[-500:]}")


def medplum_start(*, bundles: list[Path], port: int | None = None) -> tuple[subprocess.Popen, str]:
    """Start server.mjs and wait until /metadata answers; returns the process and its FHIR base URL."""
    port = port or _free_port()
    command = ["node", "--experimental-websocket", "server.mjs", "--port", str(port)]
    for bundle in bundles:
        command += ["--bundle", str(bundle)]
    LOG.parent.mkdir(exist_ok=True)
    log = open(LOG, "ab")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(command, cwd=HERE, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "NODE_NO_WARNINGS": "1"})
    base = f"http://127.0.0.1:{port}/fhir"
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            pytest.fail(f"medplum server exited with {proc.returncode}; see {LOG}")
        try:
            if requests.get(f"{base}/metadata", timeout=1).status_code == 200:
                log.close()
                return proc, base
        except requests.RequestException:
            pass
        time.sleep(0.25)
    proc.terminate()
    log.close()
    pytest.fail(f"medplum server did not answer /metadata within {START_TIMEOUT_SECONDS} s")


def medplum_stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def medplum_server() -> Iterator[tuple[str, str]]:
    need(shutil.which("node") is not None, "Node.js not installed")
    _install()
    need(_node_modules_ready(), f"run `npm ci` in {HERE}")
    proc, base = medplum_start(bundles=[LARGE_PATIENT])
    try:
        yield base, LARGE_PATIENT_ID
    finally:
        medplum_stop(proc)
