"""Fixtures for driving the app against the sandbox EHR over real HTTP (pytest-django live_server)."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from reconcile_app.sandbox.services import sandbox_client_register, sandbox_launch_create, sandbox_path_load
from reconcile_app.smart.models import EhrRegistration

DATA = Path(__file__).resolve().parent.parent / "data" / "fhir"
RECORDS = DATA / "smart_two_patients.json"
PATIENT = "smart-pat-1"
OTHER_PATIENT = "smart-pat-2"
PRACTITIONER = "smart-prac-1"
APP_CLIENT = "reconcile-app"
BACKEND_CLIENT = "reconcile-backend"
APP_SCOPES = "launch launch/patient openid fhirUser offline_access patient/*.rs patient/*.cruds"


@functools.cache
def _private_key(kind: str, slot: int) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    # RSA generation costs ~0.1-0.5 s on a shared core: one key per (kind, slot) per test session.
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP384R1())


def key_pair(kind: str = "rsa", kid: str = "test-key", *, slot: int = 0) -> tuple[str, dict]:
    """A private key (PEM) and its public JWK; a different `slot` gives a different key."""
    private = _private_key(kind, slot)
    if kind == "rsa":
        jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    else:
        jwk = json.loads(ECAlgorithm.to_jwk(private.public_key()))
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    jwk["kid"] = kid
    return pem, jwk


@pytest.fixture
def sandbox_iss(live_server) -> str:  # type: ignore[no-untyped-def]
    return f"{live_server.url}/sandbox/fhir"


@pytest.fixture
def sandbox_ehr(live_server, sandbox_iss: str, transactional_db: None) -> EhrRegistration:  # type: ignore[no-untyped-def]
    """The sandbox loaded with two patients, our public app client and our Backend Services client."""
    sandbox_path_load(path=RECORDS)
    pem, jwk = key_pair("rsa", kid="backend-1")
    sandbox_client_register(client_id=APP_CLIENT, redirect_uris=[f"{live_server.url}/smart/callback"], scopes=APP_SCOPES)
    sandbox_client_register(client_id=BACKEND_CLIENT, redirect_uris=[], jwk_public=jwk, scopes="system/*.rs")
    return EhrRegistration.objects.create(
        name="Sandbox EHR", iss=sandbox_iss, client_id=APP_CLIENT, backend_client_id=BACKEND_CLIENT,
        private_key_pem=pem, key_id="backend-1", frame_ancestors=live_server.url, write_enabled=True,
    )


def ehr_launch_url(live_server, *, patient: str = PATIENT, simulate_error: str = "") -> str:  # type: ignore[no-untyped-def]
    """What the sandbox EHR page puts in its iframe."""
    token = sandbox_launch_create(patient_id=patient, practitioner_id=PRACTITIONER, simulate_error=simulate_error)
    return f"{live_server.url}/smart/launch?" + urlencode({"iss": f"{live_server.url}/sandbox/fhir", "launch": token})


@pytest.fixture
def browser() -> requests.Session:
    """A cookie-keeping HTTP client standing in for the clinician's browser."""
    session = requests.Session()
    yield session
    session.close()


@pytest.fixture
def eager_celery() -> None:
    """Run tasks in-process even when a real broker is configured (CI): these tests check the pull, not the queue."""
    from config.celery_app import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved
