"""Fixtures for driving the app against the sandbox EHR over real HTTP (pytest-django live_server)."""
from __future__ import annotations

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


def key_pair(kind: str = "rsa", kid: str = "test-key") -> tuple[str, dict]:
    """A fresh private key (PEM) and its public JWK."""
    if kind == "rsa":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    else:
        private = ec.generate_private_key(ec.SECP384R1())
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
        private_key_pem=pem, key_id="backend-1", frame_ancestors=live_server.url,
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
