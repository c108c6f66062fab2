"""The sandbox authorization server: authorize, PKCE code exchange, refresh rotation, Backend Services, id_token."""
from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from django.test import Client
from django.utils import timezone
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from reconcile_app.sandbox.models import SandboxAuthCode, SandboxKey, SandboxToken
from reconcile_app.sandbox.services import sandbox_client_register

from .conftest import ISS, REDIRECT_URI, authorize_params, ehr_launch, pkce_pair, redirect_query

TOKEN_URL = "http://testserver/sandbox/auth/token"


def exchange(client: Client, code: str, verifier: str, **extra: str):  # type: ignore[no-untyped-def]
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
            "client_id": "reconcile-test", "code_verifier": verifier, **extra}
    return client.post("/sandbox/auth/token", data)


def test_ehr_launch_yields_context_tokens_and_id_token(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client).token
    assert token["token_type"] == "Bearer" and token["expires_in"] > 0
    assert token["patient"] == "pat-a" and token["need_patient_banner"] is True
    assert token["scope"] == "launch openid fhirUser offline_access patient/*.rs"
    assert token["refresh_token"]
    jwks = client.get("/sandbox/auth/jwks").json()
    key = jwt.PyJWK(jwks["keys"][0])
    claims = jwt.decode(token["id_token"], key.key, algorithms=["RS256"], audience="reconcile-test", issuer=ISS)
    assert claims["fhirUser"] == "Practitioner/prac-1" and claims["sub"] == "prac-1"
    assert claims["name"] == "Dr. Helen Okafor"  # OpenID name claim, shown by the app instead of an account id


def test_tokens_and_signing_key_are_not_stored_in_clear(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client).token
    hashes = set(SandboxToken.objects.values_list("token_hash", flat=True))
    assert token["access_token"] not in hashes and token["refresh_token"] not in hashes
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT private_key_pem FROM sandbox_sandboxkey")
        (raw,) = cursor.fetchone()
    assert raw.startswith("fernet:") and "PRIVATE KEY" not in raw
    assert "PRIVATE KEY" in SandboxKey.objects.get().private_key_pem


def test_wrong_code_verifier_is_refused(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    launched = ehr_launch(client, exchange=False)
    response = exchange(client, launched.code, "not-the-verifier")
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    # A refused attempt does not burn the code; the right verifier still works.
    assert exchange(client, launched.code, launched.verifier).status_code == 200


def test_code_is_single_use(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    launched = ehr_launch(client, exchange=False)
    assert exchange(client, launched.code, launched.verifier).status_code == 200
    again = exchange(client, launched.code, launched.verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_expired_code_and_mismatched_redirect_are_refused(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    launched = ehr_launch(client, exchange=False)
    assert exchange(client, launched.code, launched.verifier, redirect_uri="http://testserver/other").status_code == 400
    SandboxAuthCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert exchange(client, launched.code, launched.verifier).json()["error"] == "invalid_grant"


def test_refresh_rotates_and_old_refresh_token_is_refused(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    first = ehr_launch(client).token
    refreshed = client.post("/sandbox/auth/token", {"grant_type": "refresh_token", "refresh_token": first["refresh_token"],
                                                     "client_id": "reconcile-test"})
    assert refreshed.status_code == 200
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"] and second["patient"] == "pat-a"
    assert client.get("/sandbox/fhir/Patient/pat-a", HTTP_AUTHORIZATION=f"Bearer {second['access_token']}").status_code == 200
    replay = client.post("/sandbox/auth/token", {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]})
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_no_refresh_token_without_offline_access(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client, scope="launch patient/*.rs").token
    assert "refresh_token" not in token and "id_token" not in token


def test_authorize_requires_pkce_and_matching_aud(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    _, challenge = pkce_pair()
    no_pkce = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, code_challenge=None)))
    assert no_pkce["error"] == "invalid_request" and no_pkce["state"] == "st-123"
    plain = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, code_challenge_method="plain")))
    assert plain["error"] == "invalid_request"
    wrong_aud = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, aud="https://elsewhere.example/fhir")))
    assert wrong_aud["error"] == "invalid_request"


def test_unknown_scope_is_an_oauth_redirect(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    _, challenge = pkce_pair()
    query = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, scope="launch patient/*.bogus")))
    assert query["error"] == "invalid_scope"
    unregistered = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, scope="system/*.rs")))
    assert unregistered["error"] == "invalid_scope"


def test_unknown_client_or_redirect_uri_shows_a_page_never_a_redirect(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    _, challenge = pkce_pair()
    unknown = client.get("/sandbox/auth/authorize", authorize_params(challenge, client_id="stranger"))
    assert unknown.status_code == 400 and b"Unknown client_id" in unknown.content
    evil = client.get("/sandbox/auth/authorize", authorize_params(challenge, redirect_uri="https://evil.example/cb"))
    assert evil.status_code == 400 and "Location" not in evil


def test_standalone_launch_picks_a_patient(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    verifier, challenge = pkce_pair()
    params = authorize_params(challenge, scope="launch/patient openid fhirUser patient/*.rs")
    picker = client.get("/sandbox/auth/authorize", params)
    assert picker.status_code == 200
    assert b"Bruno Bell" in picker.content and b"Alice Anders" in picker.content
    query = redirect_query(client.post("/sandbox/auth/authorize", {**params, "patient": "pat-b", "practitioner": "prac-1"}))
    token = exchange(client, query["code"], verifier).json()
    assert token["patient"] == "pat-b"
    assert client.get("/sandbox/fhir/Patient/pat-b", HTTP_AUTHORIZATION=f"Bearer {token['access_token']}").status_code == 200
    assert client.get("/sandbox/fhir/Patient/pat-a", HTTP_AUTHORIZATION=f"Bearer {token['access_token']}").status_code == 404


def test_unknown_launch_token_is_refused(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    _, challenge = pkce_pair()
    query = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, launch="made-up")))
    assert query["error"] == "invalid_request"


# --- Backend Services -------------------------------------------------------------------------------


@pytest.fixture(params=["RS384", "ES384"])
def backend_key(request, db: None):  # type: ignore[no-untyped-def]
    if request.param == "RS384":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    else:
        private = ec.generate_private_key(ec.SECP384R1())
        jwk = json.loads(ECAlgorithm.to_jwk(private.public_key()))
    jwk["kid"] = "k1"
    sandbox_client_register(client_id="reconcile-backend", redirect_uris=[], jwk_public={"keys": [jwk]}, scopes="system/*.rs")
    return request.param, private


def assertion(key, *, aud: str = TOKEN_URL, jti: str | None = None, lifetime: int = 240, iss: str = "reconcile-backend") -> str:  # type: ignore[no-untyped-def]
    alg, private = key
    now = int(time.time())
    claims = {"iss": iss, "sub": iss, "aud": aud, "exp": now + lifetime, "jti": jti or uuid.uuid4().hex}
    return jwt.encode(claims, private, algorithm=alg, headers={"kid": "k1"})


def backend_token(client: Client, signed: str, scope: str = "system/*.rs"):  # type: ignore[no-untyped-def]
    return client.post("/sandbox/auth/token", {
        "grant_type": "client_credentials", "scope": scope,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion": signed,
    })


def test_client_credentials_token_sees_every_patient(client: Client, sandbox_data: int, backend_key) -> None:  # type: ignore[no-untyped-def]
    response = backend_token(client, assertion(backend_key))
    assert response.status_code == 200, response.content
    token = response.json()
    assert "refresh_token" not in token and "patient" not in token
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token['access_token']}"}
    assert client.get("/sandbox/fhir/Condition", {"patient": "pat-b"}, **auth).json()["total"] == 1
    assert client.get("/sandbox/fhir/Condition", **auth).json()["total"] == 2


def test_client_credentials_refuses_bad_signature_audience_lifetime_and_replay(client: Client, sandbox_data: int, backend_key) -> None:  # type: ignore[no-untyped-def]
    alg, _ = backend_key
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048) if alg == "RS384" else ec.generate_private_key(ec.SECP384R1())
    assert backend_token(client, assertion((alg, stranger))).json()["error"] == "invalid_client"
    assert backend_token(client, assertion(backend_key, aud="http://testserver/other")).status_code == 401
    assert backend_token(client, assertion(backend_key, lifetime=3600)).status_code == 401
    assert backend_token(client, assertion(backend_key, lifetime=-60)).status_code == 401
    assert backend_token(client, assertion(backend_key, iss="nobody")).status_code == 401
    once = assertion(backend_key, jti="jti-1")
    assert backend_token(client, once).status_code == 200
    replay = backend_token(client, once)
    assert replay.status_code == 401 and "jti" in replay.json()["error_description"]


def test_client_credentials_refuses_patient_or_unregistered_scopes(client: Client, sandbox_data: int, backend_key) -> None:  # type: ignore[no-untyped-def]
    assert backend_token(client, assertion(backend_key), scope="patient/*.rs").json()["error"] == "invalid_scope"
    assert backend_token(client, assertion(backend_key), scope="system/*.cruds").json()["error"] == "invalid_scope"


def test_client_credentials_refuses_hs256_assertions(client: Client, sandbox_data: int, backend_key) -> None:  # type: ignore[no-untyped-def]
    forged = jwt.encode({"iss": "reconcile-backend", "sub": "reconcile-backend", "aud": TOKEN_URL,
                         "exp": int(time.time()) + 60, "jti": "x"}, "secret", algorithm="HS256")
    assert backend_token(client, forged).status_code == 401


def test_unsupported_grant_type(client: Client, db: None) -> None:
    response = client.post("/sandbox/auth/token", {"grant_type": "password"})
    assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"
    assert response["Cache-Control"] == "no-store"


def test_confidential_client_must_authenticate_for_code_and_refresh(client: Client, sandbox_data: int) -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**json.loads(RSAAlgorithm.to_jwk(private.public_key())), "kid": "k1"}
    sandbox_client_register(client_id="reconcile-test", redirect_uris=[REDIRECT_URI], jwk_public=jwk,
                            scopes="launch openid fhirUser offline_access patient/*.rs")
    key = ("RS384", private)
    launched = ehr_launch(client, exchange=False)
    refused = exchange(client, launched.code, launched.verifier)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    signed = assertion(key, iss="reconcile-test")
    token = exchange(client, launched.code, launched.verifier,
                     client_assertion_type="urn:ietf:params:oauth:client-assertion-type:jwt-bearer", client_assertion=signed)
    assert token.status_code == 200, token.content
    refresh = {"grant_type": "refresh_token", "refresh_token": token.json()["refresh_token"]}
    assert client.post("/sandbox/auth/token", refresh).status_code == 401
    renewed = client.post("/sandbox/auth/token", {**refresh, "client_assertion": assertion(key, iss="reconcile-test")})
    assert renewed.status_code == 200 and renewed.json()["patient"] == "pat-a"
