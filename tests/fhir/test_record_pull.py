"""Record pull against a mocked EHR: paging, foreign-host links, tolerance, failures keeping the last snapshot."""
from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
import requests
import responses
from django.conf import settings
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.models import Patient, RecordPull, RecordSnapshot
from reconcile_app.fhir.selectors import snapshot_latest
from reconcile_app.fhir.services import record_pull
from reconcile_app.smart.models import EhrRegistration, SmartLaunch
from tests.smart.sandbox_env import key_pair

BASE = "https://ehr.example/fhir"
TOKEN_URL = "https://ehr.example/auth/token"
PID = "p1"
SEARCH = re.compile(re.escape(BASE) + r"/(?P<type>[A-Za-z]+)\?.*")


@pytest.fixture
def registration(db: None) -> EhrRegistration:
    pem, _ = key_pair("ec", kid="k1")
    return EhrRegistration.objects.create(
        name="Mock EHR", iss=BASE, client_id="app", backend_client_id="backend", private_key_pem=pem, key_id="k1",
        discovery={"token_endpoint": TOKEN_URL, "authorization_endpoint": "https://ehr.example/auth/authorize"},
    )


@pytest.fixture
def patient(registration: EhrRegistration) -> Patient:
    return Patient.objects.create(registration=registration, fhir_id=PID)


def bundle(resources: list[dict], next_url: str | None = None) -> dict:
    links = [{"relation": "self", "url": f"{BASE}/x"}]
    if next_url:
        links.append({"relation": "next", "url": next_url})
    return {"resourceType": "Bundle", "type": "searchset", "link": links,
            "entry": [{"resource": r, "search": {"mode": "match"}} for r in resources]}


def condition(i: int) -> dict:
    return {"resourceType": "Condition", "id": f"c{i}", "subject": {"reference": f"Patient/{PID}"},
            "clinicalStatus": {"coding": [{"code": "active"}]}, "code": {"text": f"Condition {i}"}}


def mock_ehr(rsps: responses.RequestsMock, *, searches: dict[str, list[dict]] | None = None, token: str = "sys-token",
             broken: str = "") -> None:
    """Token endpoint, the Patient read, and an empty Bundle for every search not given."""
    rsps.post(TOKEN_URL, json={"access_token": token, "token_type": "Bearer", "expires_in": 300, "scope": "system/*.rs"})
    rsps.get(f"{BASE}/Patient/{PID}", json={"resourceType": "Patient", "id": PID, "gender": "female", "birthDate": "1970-01-01",
                                            "name": [{"text": "Pat Example"}]})
    for rtype, pages in (searches or {}).items():
        for page in pages:
            rsps.get(re.compile(re.escape(f"{BASE}/{rtype}?") + ".*"), json=page)
    if broken:  # down for the page's first attempt and every retry
        for _ in range(1 + settings.FHIR_PAGE_RETRIES):
            rsps.get(re.compile(re.escape(f"{BASE}/{broken}?") + ".*"), status=503, body="down")
    rsps.get(SEARCH, json=bundle([]))


@responses.activate(assert_all_requests_are_fired=False)
def test_every_page_is_fetched_with_the_bearer(patient: Patient) -> None:
    page2 = f"{BASE}/Condition?patient={PID}&_count=2&_offset=2"
    page3 = f"{BASE}/Condition?patient={PID}&_count=2&_offset=4"
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1), condition(2)], page2),
                                                      bundle([condition(3), condition(4)], page3),
                                                      bundle([condition(5)])]})
    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    conditions = [r for r in pull.snapshot.resources if r["resourceType"] == "Condition"]
    assert sorted(r["id"] for r in conditions) == ["c1", "c2", "c3", "c4", "c5"]
    fhir_calls = [c for c in responses.calls if c.request.url.startswith(BASE)]
    assert all(c.request.headers["Authorization"] == "Bearer sys-token" for c in fhir_calls)
    assert pull.pages == len(fhir_calls)  # Patient read + every search page
    assert pull.snapshot.source == RecordSnapshot.Source.BACKEND
    assertion = dict(x.split("=", 1) for x in responses.calls[0].request.body.split("&"))
    assert assertion["grant_type"] == "client_credentials" and assertion["scope"] == "system%2F%2A.rs"
    assert AuditEvent.objects.filter(action="record.pull", outcome="ok", patient_pk=patient.pk).exists()


@responses.activate(assert_all_requests_are_fired=False)
def test_a_next_link_to_another_host_is_refused_and_the_token_stays_home(patient: Patient) -> None:
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1)], "https://evil.example/fhir/Condition?page=2")]})
    evil = responses.get(re.compile(r"https://evil\.example/.*"), json=bundle([condition(9)]))

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.FAILED and not pull.retryable
    assert "another host" in pull.error
    assert evil.call_count == 0
    assert snapshot_latest(patient=patient) is None


@responses.activate(assert_all_requests_are_fired=False)
def test_off_spec_and_unknown_resources_are_kept_raw_with_a_warning(patient: Patient) -> None:
    odd = {"resourceType": "Condition", "id": "odd", "clinicalStatus": 42, "code": "not-a-concept", "onsetDateTime": {"x": 1}}
    unknown = {"resourceType": "FutureThing", "id": "f1", "subject": {"reference": f"Patient/{PID}"}}
    outcome = {"resourceType": "OperationOutcome", "issue": [{"severity": "warning"}]}
    page = bundle([condition(1), odd, unknown])
    page["entry"].append({"resource": outcome, "search": {"mode": "outcome"}})
    page["entry"].append({"fullUrl": "urn:x"})  # an entry with no resource at all
    mock_ehr(responses.mock, searches={"Condition": [page]})

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    ids = {r.get("id") for r in pull.snapshot.resources}
    assert {"c1", "odd", "f1"} <= ids
    problems = {(w["resourceType"], w["problem"]) for w in pull.snapshot.warnings}
    assert ("FutureThing", "unexpected resource type kept raw") in problems
    assert ("OperationOutcome", "server outcome in search results") in problems


@responses.activate(assert_all_requests_are_fired=False)
def test_a_server_error_keeps_the_previous_snapshot(patient: Patient, nurse_client) -> None:  # type: ignore[no-untyped-def]
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1)])]})
    first = record_pull(patient=patient)
    assert first.status == RecordPull.Status.OK
    RecordPull.objects.filter(pk=first.pk).update(finished_at=timezone.now() - timedelta(hours=3))

    responses.reset()
    mock_ehr(responses.mock, broken="Observation")
    second = record_pull(patient=patient)

    assert second.status == RecordPull.Status.FAILED and second.retryable
    assert snapshot_latest(patient=patient).pk == first.snapshot.pk
    page = nurse_client.get(f"/patients/{patient.pk}/")
    text = page.content.decode()
    assert "data-pull-failed" in text and "The last refresh failed" in text
    assert first.snapshot and "Condition 1" in text  # the last good copy is still shown
    assert AuditEvent.objects.filter(action="record.pull", outcome="error", patient_pk=patient.pk).exists()


@responses.activate(assert_all_requests_are_fired=False)
def test_a_slow_or_down_ehr_fails_the_pull_as_retryable(patient: Patient, caplog) -> None:  # type: ignore[no-untyped-def]
    mock_ehr(responses.mock)
    responses.replace(responses.GET, f"{BASE}/Patient/{PID}", body=requests.Timeout("slow"))
    pull = record_pull(patient=patient)
    assert pull.status == RecordPull.Status.FAILED and pull.retryable
    assert "did not answer in time" in pull.error
    assert "sys-token" not in caplog.text


@responses.activate(assert_all_requests_are_fired=False)
def test_a_401_renews_the_system_token_once(patient: Patient) -> None:
    responses.post(TOKEN_URL, json={"access_token": "old", "expires_in": 300})
    responses.post(TOKEN_URL, json={"access_token": "new", "expires_in": 300})
    responses.get(f"{BASE}/Patient/{PID}", status=401)
    responses.get(f"{BASE}/Patient/{PID}", json={"resourceType": "Patient", "id": PID})
    responses.get(SEARCH, json=bundle([]))

    pull = record_pull(patient=patient)

    assert pull.status == RecordPull.Status.OK, pull.error
    auths = [c.request.headers.get("Authorization") for c in responses.calls if c.request.url.startswith(BASE)]
    assert auths[:2] == ["Bearer old", "Bearer new"]
    assert SmartLaunch.objects.filter(kind=SmartLaunch.Kind.BACKEND, status=SmartLaunch.Status.ACTIVE).count() == 1


@responses.activate(assert_all_requests_are_fired=False)
def test_a_looping_next_link_stops(patient: Patient) -> None:
    loop = f"{BASE}/Condition?patient={PID}&page=1"
    mock_ehr(responses.mock, searches={"Condition": [bundle([condition(1)], loop)] * 3})
    pull = record_pull(patient=patient)
    assert pull.status == RecordPull.Status.FAILED and "loop" in pull.error


def test_an_imported_patient_cannot_be_pulled(db: None) -> None:
    patient = Patient.objects.create(fhir_id="local-1")
    pull = record_pull(patient=patient)
    assert pull.status == RecordPull.Status.FAILED and not pull.retryable


def test_pull_asks_every_record_type_and_all_observations() -> None:
    from reconcile_app.fhir.services import PULL_SEARCHES

    types = [t for t, _ in PULL_SEARCHES]
    assert set(types) >= {"Condition", "MedicationRequest", "MedicationStatement", "AllergyIntolerance", "Observation",
                          "Procedure", "Immunization", "CarePlan", "Encounter"}
    assert dict(PULL_SEARCHES)["Observation"] == {}  # no category filter: off-spec labs without one still come
    assert json.dumps(PULL_SEARCHES)  # plain data, safe to log or show
