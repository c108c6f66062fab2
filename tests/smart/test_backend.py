"""Backend Services client assertions (private_key_jwt) and id_token validation."""
from __future__ import annotations

import time

import jwt
import pytest
import responses

from reconcile_app.smart.backend import client_assertion_create, signing_algorithm
from reconcile_app.smart.exceptions import LaunchRefused
from reconcile_app.smart.models import EhrRegistration
from reconcile_app.smart.services import id_token_validate
from tests.smart.sandbox_env import key_pair

TOKEN_URL = "https://ehr.example/auth/token"


@pytest.mark.parametrize(("kind", "alg"), [("rsa", "RS384"), ("ec", "ES384")])
def test_client_assertion_is_signed_and_short_lived(kind: str, alg: str) -> None:
    pem, jwk = key_pair(kind, kid="k9")
    assertion = client_assertion_create(client_id="backend", private_key_pem=pem, key_id="k9", token_endpoint=TOKEN_URL)
    header = jwt.get_unverified_header(assertion)
    assert header["alg"] == alg and header["kid"] == "k9"
    claims = jwt.decode(assertion, jwt.PyJWK(jwk).key, algorithms=[alg], audience=TOKEN_URL, issuer="backend")
    assert claims["sub"] == "backend" and claims["exp"] - claims["iat"] <= 300 and claims["jti"]
    other = client_assertion_create(client_id="backend", private_key_pem=pem, key_id="k9", token_endpoint=TOKEN_URL)
    assert jwt.decode(other, options={"verify_signature": False})["jti"] != claims["jti"]  # never replayable


def test_an_unreadable_key_is_refused() -> None:
    with pytest.raises(LaunchRefused):
        signing_algorithm("not a key")


ISS = "https://ehr.example/fhir"
JWKS = "https://ehr.example/auth/jwks"


@pytest.fixture
def registration(db: None) -> EhrRegistration:
    return EhrRegistration.objects.create(name="E", iss=ISS, client_id="app",
                                          discovery={"issuer": ISS, "jwks_uri": JWKS, "token_endpoint": TOKEN_URL})


def _id_token(pem: str, **overrides: object) -> str:
    now = int(time.time())
    claims = {"iss": ISS, "aud": "app", "sub": "u1", "iat": now, "exp": now + 300, "fhirUser": "Practitioner/1", **overrides}
    return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": "ehr-1"})


@responses.activate
def test_id_token_is_verified_against_the_ehr_jwks(registration: EhrRegistration) -> None:
    pem, jwk = key_pair("rsa", kid="ehr-1")
    responses.get(JWKS, json={"keys": [jwk]})
    assert id_token_validate(id_token=_id_token(pem), registration=registration)["fhirUser"] == "Practitioner/1"


@responses.activate
@pytest.mark.parametrize("overrides", [{"aud": "someone-else"}, {"iss": "https://evil.example/fhir"}, {"exp": 1000}])
def test_id_token_with_wrong_audience_issuer_or_expiry_is_refused(registration: EhrRegistration, overrides: dict) -> None:
    pem, jwk = key_pair("rsa", kid="ehr-1")
    responses.get(JWKS, json={"keys": [jwk]})
    with pytest.raises(LaunchRefused) as caught:
        id_token_validate(id_token=_id_token(pem, **overrides), registration=registration)
    assert caught.value.code == "id_token_invalid"


@responses.activate
def test_id_token_signed_by_another_key_is_refused(registration: EhrRegistration) -> None:
    _, jwk = key_pair("rsa", kid="ehr-1")
    forger, _ = key_pair("rsa", kid="ehr-1", slot=1)
    responses.get(JWKS, json={"keys": [jwk]})
    with pytest.raises(LaunchRefused):
        id_token_validate(id_token=_id_token(forger), registration=registration)


def test_unsigned_id_token_is_refused(registration: EhrRegistration) -> None:
    token = jwt.encode({"iss": ISS, "aud": "app", "sub": "u"}, key=None, algorithm="none")
    with pytest.raises(LaunchRefused):
        id_token_validate(id_token=token, registration=registration)
