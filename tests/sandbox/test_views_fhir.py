"""The sandbox FHIR API: discovery, reads, patient-scoped search with paging, create, and FHIR errors."""
from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

from django.test import Client
from django.utils import timezone

from reconcile_app.sandbox.models import SandboxResource, SandboxToken

from .conftest import ISS, ehr_launch


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_smart_configuration_names_the_endpoints_and_capabilities(client: Client, db: None) -> None:
    body = client.get("/sandbox/fhir/.well-known/smart-configuration").json()
    assert body["issuer"] == ISS
    assert body["authorization_endpoint"] == "http://testserver/sandbox/auth/authorize"
    assert body["token_endpoint"] == "http://testserver/sandbox/auth/token"
    assert body["jwks_uri"] == "http://testserver/sandbox/auth/jwks"
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert set(body["grant_types_supported"]) == {"authorization_code", "refresh_token", "client_credentials"}
    assert "private_key_jwt" in body["token_endpoint_auth_methods_supported"]
    assert {"launch-ehr", "launch-standalone", "context-banner", "permission-v2", "sso-openid-connect"} <= set(body["capabilities"])


def test_capability_statement_carries_oauth_uris_and_create_interactions(client: Client, db: None) -> None:
    response = client.get("/sandbox/fhir/metadata")
    assert response["Content-Type"].startswith("application/fhir+json")
    rest = response.json()["rest"][0]
    oauth = {e["url"]: e["valueUri"] for e in rest["security"]["extension"][0]["extension"]}
    assert oauth == {"authorize": "http://testserver/sandbox/auth/authorize", "token": "http://testserver/sandbox/auth/token"}
    interactions = {r["type"]: {i["code"] for i in r["interaction"]} for r in rest["resource"]}
    for writable in ("DetectedIssue", "Task", "Communication"):
        assert {"create", "update", "delete"} <= interactions[writable]
    assert "create" not in interactions["Condition"] and "update" in interactions["Condition"]
    assert "update" not in interactions["Patient"]


def test_loading_rewrites_urn_uuid_references_to_the_patient(sandbox_data: int) -> None:
    condition = SandboxResource.objects.get(resource_type="Condition", fhir_id="cond-a1")
    assert condition.patient_id == "pat-a"
    assert condition.json["subject"] == {"reference": "Patient/pat-a"}
    assert sandbox_data == 14


def test_read_requires_a_bearer_token(client: Client, sandbox_data: int) -> None:
    response = client.get("/sandbox/fhir/Patient/pat-a")
    assert response.status_code == 401
    assert response.json()["resourceType"] == "OperationOutcome"
    assert "Bearer" in response["WWW-Authenticate"]


def test_read_returns_the_resource(client: Client, patient_a_token: str) -> None:
    response = client.get("/sandbox/fhir/Condition/cond-a1", **bearer(patient_a_token))
    assert response.status_code == 200
    assert response.json()["code"]["coding"][0]["code"] == "38341003"


def test_unknown_resource_is_a_404_operation_outcome(client: Client, patient_a_token: str) -> None:
    response = client.get("/sandbox/fhir/Condition/nope", **bearer(patient_a_token))
    assert response.status_code == 404
    assert response.json()["issue"][0]["code"] == "not-found"


def test_patient_token_cannot_read_another_patient(client: Client, patient_a_token: str) -> None:
    assert client.get("/sandbox/fhir/Patient/pat-b", **bearer(patient_a_token)).status_code == 404
    assert client.get("/sandbox/fhir/Condition/cond-b1", **bearer(patient_a_token)).status_code == 404
    search = client.get("/sandbox/fhir/Condition", {"patient": "pat-b"}, **bearer(patient_a_token))
    assert search.status_code == 403


def test_patient_token_can_read_its_practitioner(client: Client, patient_a_token: str) -> None:
    assert client.get("/sandbox/fhir/Practitioner/prac-1", **bearer(patient_a_token)).status_code == 200


def test_search_without_patient_is_confined_to_the_token_patient(client: Client, patient_a_token: str) -> None:
    body = client.get("/sandbox/fhir/Condition", **bearer(patient_a_token)).json()
    assert [e["resource"]["id"] for e in body["entry"]] == ["cond-a1"]


def test_search_pages_with_absolute_next_links(client: Client, patient_a_token: str) -> None:
    url, seen, pages = "/sandbox/fhir/Observation?patient=pat-a&_count=3", [], 0
    while url:
        body = client.get(url, **bearer(patient_a_token)).json()
        assert body["type"] == "searchset" and body["total"] == 7
        seen += [e["resource"]["id"] for e in body["entry"]]
        assert all(e["fullUrl"].startswith(ISS + "/Observation/") for e in body["entry"])
        links = {link["relation"]: link["url"] for link in body["link"]}
        assert links["self"].startswith("http://testserver/sandbox/fhir/Observation?")
        url = links.get("next", "")
        if url:
            assert parse_qs(urlparse(url).query)["_offset"] == [str(len(seen))]
        pages += 1
    assert pages == 3
    assert seen == [f"obs-a{i}" for i in range(7)]


def test_search_by_subject_reference_and_patient_by_id(client: Client, patient_a_token: str) -> None:
    body = client.get("/sandbox/fhir/Observation", {"subject": "Patient/pat-a", "_count": "0"}, **bearer(patient_a_token)).json()
    assert body["total"] == 7 and body["entry"] == []
    patients = client.get("/sandbox/fhir/Patient", {"_id": "pat-a"}, **bearer(patient_a_token)).json()
    assert [e["resource"]["id"] for e in patients["entry"]] == ["pat-a"]


def test_search_rejects_a_bad_count(client: Client, patient_a_token: str) -> None:
    response = client.get("/sandbox/fhir/Observation", {"_count": "many"}, **bearer(patient_a_token))
    assert response.status_code == 400
    assert response.json()["issue"][0]["code"] == "invalid"


def test_default_page_size_is_fifty(client: Client, sandbox_data: int, patient_a_token: str) -> None:
    for i in range(60):
        SandboxResource.objects.create(resource_type="Observation", fhir_id=f"bulk-{i}", patient_id="pat-a",
                                       json={"resourceType": "Observation", "id": f"bulk-{i}"})
    body = client.get("/sandbox/fhir/Observation", **bearer(patient_a_token)).json()
    assert body["total"] == 67 and len(body["entry"]) == 50


def test_create_detected_issue_assigns_an_id(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    token = ehr_launch(client, scope="launch openid fhirUser patient/*.cruds").token["access_token"]
    issue = {"resourceType": "DetectedIssue", "id": "client-chosen", "status": "preliminary",
             "patient": {"reference": "Patient/pat-a"}, "detail": "Patient reports stopping a medication."}
    response = client.post("/sandbox/fhir/DetectedIssue", json.dumps(issue), content_type="application/fhir+json", **bearer(token))
    assert response.status_code == 201
    created = response.json()
    assert created["id"] != "client-chosen"
    assert response["Location"] == f"{ISS}/DetectedIssue/{created['id']}/_history/1"
    stored = SandboxResource.objects.get(resource_type="DetectedIssue", fhir_id=created["id"])
    assert stored.patient_id == "pat-a"
    assert client.get(f"/sandbox/fhir/DetectedIssue/{created['id']}", **bearer(token)).json()["detail"] == issue["detail"]


def test_create_validates_type_scope_and_patient(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    read_only = ehr_launch(client).token["access_token"]
    writer = ehr_launch(client, scope="launch patient/*.cruds").token["access_token"]
    task = {"resourceType": "Task", "status": "requested", "intent": "order", "for": {"reference": "Patient/pat-a"}}
    assert client.post("/sandbox/fhir/Task", json.dumps(task), content_type="application/json", **bearer(read_only)).status_code == 403
    mismatched = client.post("/sandbox/fhir/Task", json.dumps({**task, "resourceType": "Communication"}),
                             content_type="application/json", **bearer(writer))
    assert mismatched.status_code == 400
    other = client.post("/sandbox/fhir/Task", json.dumps({**task, "for": {"reference": "Patient/pat-b"}}),
                        content_type="application/json", **bearer(writer))
    assert other.status_code == 403
    assert client.post("/sandbox/fhir/Condition", "{}", content_type="application/json", **bearer(writer)).status_code == 405
    assert client.post("/sandbox/fhir/Task", "not json", content_type="application/json", **bearer(writer)).status_code == 400
    assert client.post("/sandbox/fhir/Task", json.dumps(task), content_type="application/json", **bearer(writer)).status_code == 201


def test_expired_access_token_is_refused(client: Client, patient_a_token: str) -> None:
    SandboxToken.objects.filter(kind="access").update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/sandbox/fhir/Patient/pat-a", **bearer(patient_a_token))
    assert response.status_code == 401
    assert "expired" in response.json()["issue"][0]["diagnostics"]


def test_links_carry_only_the_parameters_the_search_applied(client: Client, patient_a_token: str) -> None:
    body = client.get("/sandbox/fhir/Observation", {"patient": "pat-a", "category": "laboratory", "_count": "5"},
                      **bearer(patient_a_token)).json()
    links = {link["relation"]: parse_qs(urlparse(link["url"]).query) for link in body["link"]}
    assert links["self"] == {"patient": ["pat-a"], "_count": ["5"], "_offset": ["0"]}
    assert links["next"]["_offset"] == ["5"]


def test_unsupported_methods_and_paths_answer_with_operation_outcomes(client: Client, patient_a_token: str) -> None:
    delete = client.delete("/sandbox/fhir/Patient/pat-a", **bearer(patient_a_token))
    assert delete.status_code == 405 and delete.json()["resourceType"] == "OperationOutcome"
    assert delete["Allow"] == "GET"
    unknown = client.get("/sandbox/fhir/Patient/pat-a/_history/1", **bearer(patient_a_token))
    assert unknown.status_code == 404 and unknown.json()["issue"][0]["code"] == "not-found"


def test_an_ehr_update_is_a_new_version_and_if_match_guards_it(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    writer = ehr_launch(client, scope="launch patient/*.cruds").token["access_token"]
    read = client.get("/sandbox/fhir/Condition/cond-a1", **bearer(writer))
    resolved = {**read.json(), "clinicalStatus": {"coding": [{"code": "resolved"}]}}
    stale = read["ETag"]
    updated = client.put("/sandbox/fhir/Condition/cond-a1", json.dumps(resolved), content_type="application/fhir+json",
                         HTTP_IF_MATCH=stale, **bearer(writer))
    assert updated.status_code == 200 and updated.json()["meta"]["versionId"] == "2" and updated["ETag"] == 'W/"2"'
    assert SandboxResource.objects.get(fhir_id="cond-a1").json["clinicalStatus"]["coding"][0]["code"] == "resolved"
    again = client.put("/sandbox/fhir/Condition/cond-a1", json.dumps(resolved), content_type="application/fhir+json",
                       HTTP_IF_MATCH=stale, **bearer(writer))
    assert again.status_code == 412 and again.json()["issue"][0]["code"] == "conflict"  # someone else changed it meanwhile


def test_updates_and_deletes_need_their_scope_and_deletes_only_what_apps_wrote(client: Client, sandbox_data: int, app_client) -> None:  # type: ignore[no-untyped-def]
    read_only = ehr_launch(client).token["access_token"]
    writer = ehr_launch(client, scope="launch patient/*.cruds").token["access_token"]
    condition = client.get("/sandbox/fhir/Condition/cond-a1", **bearer(writer)).json()
    assert client.put("/sandbox/fhir/Condition/cond-a1", json.dumps(condition), content_type="application/json",
                      **bearer(read_only)).status_code == 403
    assert client.put("/sandbox/fhir/Condition/cond-a1", json.dumps({**condition, "id": "other"}), content_type="application/json",
                      **bearer(writer)).status_code == 400
    refused = client.delete("/sandbox/fhir/Condition/cond-a1", **bearer(writer))
    assert refused.status_code == 405 and refused["Allow"] == "GET, PUT"
    issue = {"resourceType": "DetectedIssue", "status": "final", "patient": {"reference": "Patient/pat-a"}}
    created = client.post("/sandbox/fhir/DetectedIssue", json.dumps(issue), content_type="application/json", **bearer(writer)).json()
    assert client.delete(f"/sandbox/fhir/DetectedIssue/{created['id']}", **bearer(read_only)).status_code == 403
    assert client.delete(f"/sandbox/fhir/DetectedIssue/{created['id']}", **bearer(writer)).status_code == 204
    assert client.get(f"/sandbox/fhir/DetectedIssue/{created['id']}", **bearer(writer)).status_code == 404


def test_the_ehr_stopping_a_medication_is_a_new_version_of_the_order(sandbox_data: int) -> None:
    from reconcile_app.sandbox.services import sandbox_medication_stop

    order = {"resourceType": "MedicationRequest", "id": "med-x", "status": "active", "intent": "order",
             "subject": {"reference": "Patient/pat-a"}}
    SandboxResource.objects.create(resource_type="MedicationRequest", fhir_id="med-x", patient_id="pat-a", json=order)
    row = sandbox_medication_stop(fhir_id="med-x")
    assert (row.json["status"], row.json["meta"]["versionId"], row.json["id"]) == ("stopped", "2", "med-x")
