"""A down or slow EHR during the launch ends on a clear page, audited, with nothing kept or leaked."""
from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses

from reconcile_app.audit.models import AuditEvent
from reconcile_app.smart.models import EhrRegistration, SmartLaunch
from reconcile_app.smart.services import launch_scopes

ISS = "https://ehr.example/fhir"
WELL_KNOWN = f"{ISS}/.well-known/smart-configuration"
TOKEN_URL = "https://ehr.example/auth/token"
CONFIG = {"issuer": ISS, "authorization_endpoint": "https://ehr.example/auth/authorize", "token_endpoint": TOKEN_URL,
          "jwks_uri": "https://ehr.example/auth/jwks", "code_challenge_methods_supported": ["S256"]}


@pytest.fixture
def registration(db: None) -> EhrRegistration:
    return EhrRegistration.objects.create(name="E", iss=ISS, client_id="app")


@responses.activate
@pytest.mark.parametrize("fault", [requests.ConnectionError("down"), requests.ReadTimeout("slow")])
def test_ehr_down_at_launch_is_a_clear_page(client, registration: EhrRegistration, fault: Exception) -> None:  # type: ignore[no-untyped-def]
    responses.get(WELL_KNOWN, body=fault)
    response = client.get("/smart/launch", {"iss": ISS, "launch": "abc"})
    assert response.status_code == 503
    assert b'data-launch-error="ehr_unavailable"' in response.content
    assert AuditEvent.objects.filter(action="smart.launch", outcome="error", details__code="ehr_unavailable").exists()
    assert not SmartLaunch.objects.exists()


def _start(client) -> tuple[str, dict]:  # type: ignore[no-untyped-def]
    responses.get(WELL_KNOWN, json=CONFIG)
    response = client.get("/smart/launch", {"iss": ISS + "/", "launch": "abc"})
    assert response.status_code == 302
    query = {k: v[0] for k, v in parse_qs(urlsplit(response["Location"]).query).items()}
    assert response["Location"].startswith("https://ehr.example/auth/authorize?")
    return query["state"], query


@responses.activate
@pytest.mark.parametrize("fault", [requests.ConnectionError("down"), requests.ReadTimeout("slow")])
def test_token_endpoint_down_or_slow_at_callback_is_a_clear_page(client, registration: EhrRegistration, fault: Exception, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    state, _ = _start(client)
    responses.post(TOKEN_URL, body=fault)
    response = client.get("/smart/callback", {"state": state, "code": "the-code"})
    assert response.status_code == 503 and b'data-launch-error="ehr_unavailable"' in response.content
    launch = SmartLaunch.objects.get()
    assert launch.status == SmartLaunch.Status.FAILED and launch.client_state is None
    assert AuditEvent.objects.filter(action="smart.callback", outcome="error", object_id=str(launch.pk)).exists()
    assert "the-code" not in caplog.text and state not in caplog.text


@responses.activate
def test_authorize_request_carries_pkce_aud_and_v2_scopes(client, registration: EhrRegistration) -> None:  # type: ignore[no-untyped-def]
    registration.write_enabled = True
    registration.save()
    _, query = _start(client)
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["aud"] == ISS and query["launch"] == "abc" and query["client_id"] == "app"
    scopes = query["scope"].split()
    assert scopes.count("launch") == 1 and "launch/patient" not in scopes
    assert {"openid", "fhirUser", "patient/*.rs", "offline_access", "patient/DetectedIssue.cu", "patient/Task.cu",
            "patient/Communication.cu"} <= set(scopes)
    launch = SmartLaunch.objects.get()
    assert launch.state_hash and query["state"] not in launch.state_hash  # only the hash is stored


@responses.activate
def test_error_returned_by_the_ehr_is_shown_by_code_only(client, registration: EhrRegistration) -> None:  # type: ignore[no-untyped-def]
    state, _ = _start(client)
    response = client.get("/smart/callback", {"state": state, "error": "access_denied",
                                              "error_description": "<script>alert(1)</script>"})
    assert response.status_code == 400 and b'data-launch-error="access_denied"' in response.content
    assert b"<script>alert(1)" not in response.content
    assert not any(c.request.url == TOKEN_URL for c in responses.calls)


@responses.activate
def test_token_response_without_an_id_token_is_refused(client, registration: EhrRegistration) -> None:  # type: ignore[no-untyped-def]
    state, _ = _start(client)
    responses.post(TOKEN_URL, json={"access_token": "tok", "token_type": "Bearer", "expires_in": 60, "patient": "p1"})
    response = client.get("/smart/callback", {"state": state, "code": "c"})
    assert b'data-launch-error="id_token_missing"' in response.content
    assert not response.wsgi_request.user.is_authenticated


def test_standalone_scopes_ask_for_a_patient_pick() -> None:
    registration = EhrRegistration(scopes="launch openid fhirUser patient/*.rs offline_access")
    assert launch_scopes(registration) == "openid fhirUser patient/*.rs offline_access"
