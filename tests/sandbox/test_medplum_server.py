"""Smoke test of the FHIR server we did not write (@medplum/fhir-router), as the record-pull tests use it."""
from __future__ import annotations

import json

import pytest
import requests

from tests.fhir_server.fixtures import LARGE_PATIENT, medplum_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.node
AUTH = {"Authorization": "Bearer test-token"}


def test_large_patient_fixture_is_large_and_lean() -> None:
    bundle = json.loads(LARGE_PATIENT.read_text())
    assert len(bundle["entry"]) >= 2000
    assert LARGE_PATIENT.stat().st_size < 3_000_000


def test_search_pages_through_every_observation_by_next_links(medplum_server: tuple[str, str]) -> None:  # noqa: F811
    base, patient_id = medplum_server
    url: str | None = f"{base}/Observation?patient={patient_id}&_count=500"
    ids: list[str] = []
    pages = 0
    while url:
        body = requests.get(url, headers=AUTH, timeout=30).json()
        assert body["resourceType"] == "Bundle" and body["total"] >= 1800
        ids += [e["resource"]["id"] for e in body["entry"]]
        url = next((link["url"] for link in body["link"] if link["relation"] == "next"), None)
        if url:
            assert url.startswith(base + "/Observation?")
        pages += 1
    assert len(ids) == len(set(ids)) == body["total"]
    assert pages == -(-body["total"] // 500)


def test_reads_need_a_bearer_token_and_unknown_ids_are_404(medplum_server: tuple[str, str]) -> None:  # noqa: F811
    base, patient_id = medplum_server
    assert requests.get(f"{base}/Patient/{patient_id}", timeout=10).status_code == 401
    assert requests.get(f"{base}/Patient/{patient_id}", headers=AUTH, timeout=10).json()["id"] == patient_id
    missing = requests.get(f"{base}/Patient/nobody", headers=AUTH, timeout=10)
    assert missing.status_code == 404 and missing.json()["resourceType"] == "OperationOutcome"


def test_fault_injection_fails_requests_and_points_next_links_elsewhere(medplum_server: tuple[str, str]) -> None:  # noqa: F811
    base, patient_id = medplum_server
    control = base.rsplit("/fhir", 1)[0] + "/_control"
    search = f"{base}/Observation?patient={patient_id}&_count=10"
    try:
        requests.post(control, json={"fail_status": 503, "fail_match": "Observation", "fail_times": 1,
                                     "next_base": "http://elsewhere.invalid/fhir"}, timeout=10).raise_for_status()
        assert requests.get(search, headers=AUTH, timeout=30).status_code == 503
        body = requests.get(search, headers=AUTH, timeout=30).json()
        next_url = next(link["url"] for link in body["link"] if link["relation"] == "next")
        assert next_url.startswith("http://elsewhere.invalid/fhir/Observation?")
    finally:
        requests.post(control, json={}, timeout=10).raise_for_status()
    assert requests.get(search, headers=AUTH, timeout=30).status_code == 200
