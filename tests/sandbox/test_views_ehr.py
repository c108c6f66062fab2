"""The EHR-like pages and every simulated launch error."""
from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from reconcile_app.sandbox.models import SandboxLaunch, SimulatedError
from reconcile_app.sandbox.services import sandbox_launch_create

from .conftest import ISS, REDIRECT_URI, authorize_params, ehr_launch, pkce_pair, redirect_query


def test_ehr_page_lists_patients_without_a_login(client: Client, sandbox_data: int) -> None:
    response = client.get("/sandbox/ehr/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Alice Anders" in html and "Bruno Bell" in html
    assert "Dr. Helen Okafor" in html  # the practitioner selector
    assert 'formaction="/sandbox/ehr/patients/pat-a/"' in html
    for value, _ in SimulatedError.choices:
        assert f'value="{value}"' in html


def test_chart_frames_the_app_with_a_fresh_launch(client: Client, sandbox_data: int) -> None:
    response = client.get("/sandbox/ehr/patients/pat-a/", {"practitioner": "prac-1", "simulate_error": "auth_invalid_scope"})
    assert response.status_code == 200
    html = response.content.decode()
    src = unescape(re.search(r'<iframe[^>]*src="([^"]+)"', html).group(1))
    query = {k: v[0] for k, v in parse_qs(urlparse(src).query).items()}
    assert urlparse(src).path == "/smart/launch" and query["iss"] == ISS
    assert 'target="_blank"' in html  # the new-window link
    launch = SandboxLaunch.objects.get()
    assert (launch.patient_id, launch.practitioner_id, launch.simulate_error) == ("pat-a", "prac-1", "auth_invalid_scope")
    assert query["launch"] != launch.token_hash  # only the hash is stored


def test_chart_of_an_unknown_patient_is_404(client: Client, sandbox_data: int) -> None:
    assert client.get("/sandbox/ehr/patients/nobody/").status_code == 404


@pytest.mark.parametrize("simulated", [SimulatedError.AUTH_INVALID_CLIENT_ID, SimulatedError.AUTH_INVALID_REDIRECT_URI])
def test_simulated_client_or_redirect_errors_show_a_page(client: Client, sandbox_data: int, app_client, simulated: str) -> None:  # type: ignore[no-untyped-def]
    launch = sandbox_launch_create(patient_id="pat-a", simulate_error=simulated)
    _, challenge = pkce_pair()
    response = client.get("/sandbox/auth/authorize", authorize_params(challenge, launch=launch))
    assert response.status_code == 400 and "Location" not in response


def test_simulated_invalid_scope_redirects_with_the_error(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    launch = sandbox_launch_create(patient_id="pat-a", simulate_error=SimulatedError.AUTH_INVALID_SCOPE)
    _, challenge = pkce_pair()
    query = redirect_query(client.get("/sandbox/auth/authorize", authorize_params(challenge, launch=launch)))
    assert query == {"error": "invalid_scope", "error_description": query["error_description"], "state": "st-123"}


@pytest.mark.parametrize("simulated", [SimulatedError.TOKEN_INVALID_TOKEN, SimulatedError.TOKEN_EXPIRED_TOKEN])
def test_simulated_token_endpoint_errors(client: Client, sandbox_data: int, app_client, simulated: str) -> None:  # type: ignore[no-untyped-def]
    launched = ehr_launch(client, simulate_error=simulated, exchange=False)
    response = client.post("/sandbox/auth/token", {"grant_type": "authorization_code", "code": launched.code,
                                                    "redirect_uri": REDIRECT_URI, "code_verifier": launched.verifier})
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


def test_simulated_expired_refresh_token(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client, simulate_error=SimulatedError.TOKEN_EXPIRED_REFRESH_TOKEN).token
    assert client.get("/sandbox/fhir/Patient/pat-a", HTTP_AUTHORIZATION=f"Bearer {token['access_token']}").status_code == 200
    response = client.post("/sandbox/auth/token", {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]})
    assert response.status_code == 400 and "expired" in response.json()["error_description"]


@pytest.mark.parametrize(("simulated", "word"), [
    (SimulatedError.REQUEST_INVALID_TOKEN, "invalid"), (SimulatedError.REQUEST_EXPIRED_TOKEN, "expired"),
])
def test_simulated_fhir_request_errors_are_401_outcomes(client: Client, sandbox_data: int, app_client, simulated: str, word: str) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client, simulate_error=simulated).token
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token['access_token']}"}
    response = client.get("/sandbox/fhir/Patient/pat-a", **auth)
    assert response.status_code == 401
    assert word in response.json()["issue"][0]["diagnostics"]
    # A refresh does not cure it: the simulation follows the grant, so the app must end on a clear page.
    refreshed = client.post("/sandbox/auth/token", {"grant_type": "refresh_token", "refresh_token": token["refresh_token"]}).json()
    assert client.get("/sandbox/fhir/Patient/pat-a", HTTP_AUTHORIZATION=f"Bearer {refreshed['access_token']}").status_code == 401


def test_chart_side_panel_lists_active_problems_medications_and_allergies(client: Client, sandbox_data: int) -> None:
    html = client.get("/sandbox/ehr/patients/pat-a/").content.decode()
    assert "Problems (1)" in html and "Hypertensive disorder" in html
    assert "Allergies (1)" in html and "Allergy to penicillin" in html
    assert "Diabetes mellitus type 2" not in html  # another patient's problem


def test_app_launch_url_can_point_at_another_origin(client: Client, sandbox_data: int, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SANDBOX_APP_LAUNCH_URL = "https://reconcile.example.org/smart/launch"
    html = client.get("/sandbox/ehr/patients/pat-a/").content.decode()
    assert 'src="https://reconcile.example.org/smart/launch?iss=' in html


def test_the_chart_frames_the_launch_url_the_app_registered_and_allows_it_in_frame_src(client: Client, sandbox_data: int) -> None:
    from reconcile_app.sandbox.services import sandbox_client_register

    sandbox_client_register(client_id="elsewhere", redirect_uris=["http://localhost:8000/smart/callback"], scopes="launch",
                            launch_url="http://localhost:8000/smart/launch")
    response = client.get("/sandbox/ehr/patients/pat-a/")
    assert 'src="http://localhost:8000/smart/launch?iss=' in response.content.decode()
    assert "frame-src 'self' http://localhost:8000;" in response["Content-Security-Policy"]


def test_the_chart_lists_what_apps_wrote_for_the_patient(client: Client, sandbox_data: int) -> None:
    from reconcile_app.sandbox.services import sandbox_resource_create

    issue = sandbox_resource_create(resource={
        "resourceType": "DetectedIssue", "status": "final", "patient": {"reference": "Patient/pat-a"},
        "code": {"text": "Contradiction (medication)"}, "identifiedDateTime": "2026-01-05T18:04:00-05:00",
        "detail": "The patient says they stopped lisinopril.\n\nPatient-reported: stopped lisinopril",
    })
    sandbox_resource_create(resource={"resourceType": "DetectedIssue", "status": "final", "patient": {"reference": "Patient/pat-b"},
                                      "code": {"text": "Another patient's issue"}})
    html = client.get("/sandbox/ehr/patients/pat-a/").content.decode()
    assert "From apps (1)" in html and f'data-resource="DetectedIssue/{issue.fhir_id}"' in html
    assert "DetectedIssue: Contradiction (medication)" in html and "The patient says they stopped lisinopril." in html
    assert "Another patient" not in html
