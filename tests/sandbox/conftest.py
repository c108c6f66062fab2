"""Sandbox fixtures: a loaded two-patient bundle, a registered public client, and a PKCE launch helper."""
from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from reconcile_app.sandbox.models import SandboxClient
from reconcile_app.sandbox.services import sandbox_client_register, sandbox_launch_create, sandbox_path_load

DATA = Path(__file__).resolve().parent / "data"
ISS = "http://testserver/sandbox/fhir"
REDIRECT_URI = "http://testserver/smart/callback"
APP_SCOPES = "launch launch/patient openid fhirUser offline_access patient/*.cruds user/*.rs"


@pytest.fixture
def sandbox_data(db: None) -> int:
    return sandbox_path_load(path=DATA / "two_patients.json")


@pytest.fixture
def app_client(db: None) -> SandboxClient:
    return sandbox_client_register(client_id="reconcile-test", redirect_uris=[REDIRECT_URI], scopes=APP_SCOPES)


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_params(challenge: str, **overrides: str) -> dict[str, str]:
    params = {
        "response_type": "code", "client_id": "reconcile-test", "redirect_uri": REDIRECT_URI,
        "scope": "launch openid fhirUser offline_access patient/*.rs", "state": "st-123", "aud": ISS,
        "code_challenge": challenge, "code_challenge_method": "S256",
    }
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def redirect_query(response) -> dict[str, str]:  # type: ignore[no-untyped-def]
    assert response.status_code == 302, response.content[:300]
    return {k: v[0] for k, v in parse_qs(urlparse(response["Location"]).query).items()}


@dataclass
class Launched:
    code: str
    verifier: str
    token: dict


def ehr_launch(client: Client, *, patient_id: str = "pat-a", simulate_error: str = "", scope: str | None = None,
               exchange: bool = True) -> Launched:
    """Authorize with an EHR launch token, then (optionally) exchange the code."""
    launch = sandbox_launch_create(patient_id=patient_id, practitioner_id="prac-1", simulate_error=simulate_error)
    verifier, challenge = pkce_pair()
    extra = {"scope": scope} if scope else {}
    query = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, launch=launch, **extra)))
    assert query["state"] == "st-123"
    token: dict = {}
    if exchange:
        response = client.post("/sandbox/auth/token", {
            "grant_type": "authorization_code", "code": query["code"], "redirect_uri": REDIRECT_URI,
            "client_id": "reconcile-test", "code_verifier": verifier,
        })
        token = response.json()
    return Launched(code=query["code"], verifier=verifier, token=token)


@pytest.fixture
def patient_a_token(client: Client, sandbox_data: int, app_client: SandboxClient) -> str:
    return ehr_launch(client).token["access_token"]
