"""Outbound SMART HTTP: discovery with its fallback, timeouts and error classes."""
from __future__ import annotations

import pytest
import requests
import responses

from reconcile_app.core.exceptions import PermanentError, RetryableError
from reconcile_app.smart import client
from reconcile_app.smart.exceptions import EhrProtocolError, EhrUnavailable, TokenRejected

ISS = "https://ehr.example/fhir"
WELL_KNOWN = f"{ISS}/.well-known/smart-configuration"


@responses.activate
def test_discovery_reads_the_well_known_configuration() -> None:
    responses.get(WELL_KNOWN, json={
        "issuer": ISS, "authorization_endpoint": "https://ehr.example/auth/authorize",
        "token_endpoint": "https://ehr.example/auth/token", "code_challenge_methods_supported": ["S256"],
        "jwks_uri": "https://ehr.example/auth/jwks", "unrelated": "dropped",
    })
    config = client.discovery_fetch(iss=ISS + "/")
    assert config["source"] == "well-known"
    assert config["token_endpoint"] == "https://ehr.example/auth/token"
    assert config["code_challenge_methods_supported"] == ["S256"]
    assert "unrelated" not in config


@responses.activate
def test_discovery_falls_back_to_the_capability_statement_oauth_uris() -> None:
    responses.get(WELL_KNOWN, status=404)
    responses.get(f"{ISS}/metadata", json={"resourceType": "CapabilityStatement", "rest": [{"security": {"extension": [{
        "url": client.OAUTH_URIS_EXT,
        "extension": [{"url": "authorize", "valueUri": "https://ehr.example/a"}, {"url": "token", "valueUri": "https://ehr.example/t"}],
    }]}}]})
    config = client.discovery_fetch(iss=ISS)
    assert config == {"authorization_endpoint": "https://ehr.example/a", "token_endpoint": "https://ehr.example/t",
                      "source": "capability-statement"}


@responses.activate
def test_discovery_refuses_endpoints_that_are_not_http_urls() -> None:
    responses.get(WELL_KNOWN, json={"authorization_endpoint": "javascript:alert(1)", "token_endpoint": "https://ehr.example/t"})
    with pytest.raises(EhrProtocolError):
        client.discovery_fetch(iss=ISS)


@responses.activate
def test_discovery_without_any_token_endpoint_is_a_permanent_error() -> None:
    responses.get(WELL_KNOWN, status=404)
    responses.get(f"{ISS}/metadata", json={"resourceType": "CapabilityStatement", "rest": [{}]})
    with pytest.raises(PermanentError):
        client.discovery_fetch(iss=ISS)


@responses.activate
@pytest.mark.parametrize("fault", [requests.ConnectTimeout("x"), requests.ReadTimeout("x"), requests.ConnectionError("x")])
def test_a_down_or_slow_ehr_is_retryable(fault: Exception) -> None:
    responses.get(WELL_KNOWN, body=fault)
    with pytest.raises(EhrUnavailable) as caught:
        client.discovery_fetch(iss=ISS)
    assert isinstance(caught.value, RetryableError)


@responses.activate
def test_fhir_status_codes_map_to_retry_or_not() -> None:
    session = client.http_session(bearer="t")
    responses.get(f"{ISS}/A", status=401)
    responses.get(f"{ISS}/B", status=502)
    responses.get(f"{ISS}/C", status=404)
    responses.get(f"{ISS}/D", body="<html>")
    with pytest.raises(TokenRejected):
        client.fhir_get(session=session, url=f"{ISS}/A")
    with pytest.raises(EhrUnavailable):
        client.fhir_get(session=session, url=f"{ISS}/B")
    with pytest.raises(EhrProtocolError):
        client.fhir_get(session=session, url=f"{ISS}/C")
    with pytest.raises(EhrProtocolError):
        client.fhir_get(session=session, url=f"{ISS}/D")


@responses.activate
def test_requests_carry_a_timeout_and_never_follow_redirects(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SMART_HTTP_TIMEOUT_SECONDS = 3
    responses.get(f"{ISS}/R", status=302, headers={"Location": "https://evil.example/steal"})
    evil = responses.get("https://evil.example/steal", json={})
    with pytest.raises(EhrProtocolError):
        client.fhir_get(session=client.http_session(bearer="t"), url=f"{ISS}/R")
    assert evil.call_count == 0
    assert responses.calls[0].request.req_kwargs["timeout"] == 3.0


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert client.same_origin("https://EHR.example/fhir/x?y", "https://ehr.example/fhir")
    assert not client.same_origin("http://ehr.example/fhir", "https://ehr.example/fhir")
    assert not client.same_origin("https://ehr.example:8443/fhir", "https://ehr.example/fhir")
    assert not client.same_origin("https://ehr.example.evil.com/fhir", "https://ehr.example/fhir")


def test_oauth_error_codes_from_the_url_are_never_kept_verbatim() -> None:
    assert client.oauth_error_code("invalid_scope") == "invalid_scope"
    assert client.oauth_error_code("<script>") == "unknown_error"
    assert client.oauth_error_code("") == ""
