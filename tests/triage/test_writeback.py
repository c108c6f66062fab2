"""Write-back on confirm: a DetectedIssue (else Task, else Communication), retried and visible; against
HTTP stubs, the sandbox EHR on a live server, and @medplum/fhir-router."""
from __future__ import annotations

from pathlib import Path

import pytest
import responses
from django.test import Client
from django.urls import reverse

from reconcile_app.smart.models import EhrRegistration, SmartLaunch
from reconcile_app.triage import client as fhir
from reconcile_app.triage.models import WriteBack
from reconcile_app.triage.services import triage_item_confirm

from .factories import item_create, patient_create

BASE = "https://ehr.example.org/fhir"
CITED = [{"resourceType": "MedicationRequest", "id": "medrx-001", "system": "http://www.nlm.nih.gov/research/umls/rxnorm",
          "code": "314076", "display": "Lisinopril"}]


def _patient(*, base: str = BASE, fhir_id: str = "pat-a", write_enabled: bool = True, token: str | None = "tok"):  # type: ignore[no-untyped-def]
    registration = EhrRegistration.objects.create(name="EHR", iss=base, client_id="app", write_enabled=write_enabled)
    if token:
        SmartLaunch.objects.create(registration=registration, kind="ehr", status="active", patient_fhir_id=fhir_id,
                                   client_state={"server": {"auth": {"access_token": token}}})
    return patient_create(fhir_id=fhir_id, registration=registration)


def _confirm(item, user, capture):  # type: ignore[no-untyped-def]
    with capture(execute=True):
        triage_item_confirm(item=item, user=user)
    return WriteBack.objects.get(item=item)


@pytest.mark.django_db
@responses.activate
def test_confirm_writes_a_detected_issue_with_the_bearer_and_shows_its_id(nurse, nurse_client, django_capture_on_commit_callbacks):
    responses.post(f"{BASE}/DetectedIssue", status=201, json={"resourceType": "DetectedIssue", "id": "di-1"})
    item = item_create(patient=_patient(), citations=CITED)
    wb = _confirm(item, nurse, django_capture_on_commit_callbacks)
    assert (wb.status, wb.resource_type, wb.resource_id, wb.attempts) == ("done", "DetectedIssue", "di-1", 1)
    request = responses.calls[0].request
    assert request.headers["Authorization"] == "Bearer tok"
    assert b'"MedicationRequest/medrx-001"' in request.body
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "DetectedIssue/di-1" in body


@pytest.mark.django_db
def test_no_write_without_write_scopes(nurse, django_capture_on_commit_callbacks):
    item = item_create(patient=_patient(write_enabled=False))
    with django_capture_on_commit_callbacks(execute=True):
        triage_item_confirm(item=item, user=nurse)
    assert not WriteBack.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("write_enabled, reason", [(False, "the EHR registration does not allow writes"),
                                                   (None, "the record was loaded from a file")])
def test_confirming_where_write_back_is_not_set_up_says_not_configured_not_failed(nurse_client, write_enabled, reason):
    patient = _patient(write_enabled=False) if write_enabled is False else patient_create()
    item = item_create(patient=patient)
    page = nurse_client.post(reverse("triage:finding_step", args=[item.finding_id, "confirm"]), follow=True)
    body = page.content.decode()
    assert "Confirmed. Not written to the EHR: write-back is not configured" in body
    assert 'id="writeback"' in body and "Not configured" in body and reason in body
    assert 'class="error"' not in body.split('id="writeback"')[1].split("</p>")[0]


@pytest.mark.django_db
@responses.activate
def test_falls_back_to_task_when_detected_issue_is_unsupported(nurse, django_capture_on_commit_callbacks):
    responses.post(f"{BASE}/DetectedIssue", status=404, json={"resourceType": "OperationOutcome"})
    responses.post(f"{BASE}/Task", status=201, headers={"Location": f"{BASE}/Task/t-9/_history/1"}, body="")
    wb = _confirm(item_create(patient=_patient()), nurse, django_capture_on_commit_callbacks)
    assert (wb.status, wb.resource_type, wb.resource_id) == ("done", "Task", "t-9")


@pytest.mark.django_db
@responses.activate
def test_falls_back_to_communication_when_task_is_also_unsupported(nurse, django_capture_on_commit_callbacks):
    responses.post(f"{BASE}/DetectedIssue", status=405)
    responses.post(f"{BASE}/Task", status=400, json={"issue": [{"diagnostics": "Resource type not supported"}]})
    responses.post(f"{BASE}/Communication", status=201, json={"resourceType": "Communication", "id": "c-1"})
    wb = _confirm(item_create(patient=_patient()), nurse, django_capture_on_commit_callbacks)
    assert (wb.status, wb.resource_type) == ("done", "Communication")


@pytest.mark.django_db
@responses.activate
def test_server_errors_retry_with_backoff_then_stay_visible_and_can_be_retried(nurse, nurse_client, django_capture_on_commit_callbacks, eager_retries):
    responses.post(f"{BASE}/DetectedIssue", status=503)
    item = item_create(patient=_patient())
    wb = _confirm(item, nurse, django_capture_on_commit_callbacks)
    assert wb.status == "failed" and wb.attempts == 6 and "503" in wb.last_error
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "Failed" in body and "503" in body
    responses.replace(responses.POST, f"{BASE}/DetectedIssue", status=201, json={"resourceType": "DetectedIssue", "id": "di-2"})
    with django_capture_on_commit_callbacks(execute=True):
        nurse_client.post(reverse("triage:finding_step", args=[item.finding_id, "writeback-retry"]))
    wb.refresh_from_db()
    assert (wb.status, wb.resource_id) == ("done", "di-2")


@pytest.mark.django_db
@responses.activate
def test_a_refused_grant_fails_at_once_without_retrying(nurse, django_capture_on_commit_callbacks):
    responses.post(f"{BASE}/DetectedIssue", status=403)
    wb = _confirm(item_create(patient=_patient()), nurse, django_capture_on_commit_callbacks)
    assert wb.status == "failed" and wb.attempts == 1 and "no write grant" in wb.last_error


def _sandbox_token() -> str:
    from reconcile_app.sandbox.services import sandbox_client_register, sandbox_path_load
    from tests.sandbox.conftest import APP_SCOPES, REDIRECT_URI, ehr_launch

    sandbox_path_load(path=Path(__file__).resolve().parent.parent / "sandbox" / "data" / "two_patients.json")
    sandbox_client_register(client_id="reconcile-test", redirect_uris=[REDIRECT_URI], scopes=APP_SCOPES)
    return ehr_launch(Client(), patient_id="pat-a", scope="launch openid fhirUser patient/*.crs").token["access_token"]


@pytest.mark.django_db(transaction=True)
def test_sandbox_ehr_stores_the_detected_issue_with_the_cited_references(live_server, nurse):
    base = f"{live_server.url}/sandbox/fhir"
    token = _sandbox_token()
    item = item_create(patient=_patient(base=base, token=token), citations=[{"resourceType": "Observation", "id": "obs-a1"}])
    triage_item_confirm(item=item, user=nurse)  # autocommit: the on-commit task runs at once
    wb = WriteBack.objects.get(item=item)
    assert wb.status == "done", wb.last_error
    stored = fhir.fhir_resource_read(base_url=base, bearer=token, resource_type=wb.resource_type, resource_id=wb.resource_id)
    assert stored["resourceType"] == "DetectedIssue" and stored["status"] == "final"
    assert stored["implicated"] == [{"reference": "Observation/obs-a1"}]
    assert stored["patient"] == {"reference": "Patient/pat-a"}


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_medplum_stores_the_detected_issue_with_the_cited_references(medplum_server, nurse):
    base, patient_id = medplum_server
    item = item_create(patient=_patient(base=base, fhir_id=patient_id, token="any"), citations=CITED)
    triage_item_confirm(item=item, user=nurse)
    wb = WriteBack.objects.get(item=item)
    assert wb.status == "done", wb.last_error
    stored = fhir.fhir_resource_read(base_url=base, bearer="any", resource_type="DetectedIssue", resource_id=wb.resource_id)
    assert [r["reference"] for r in stored["implicated"]] == ["MedicationRequest/medrx-001"]
    assert stored["severity"] == "high" and stored["patient"]["reference"] == f"Patient/{patient_id}"


from tests.fhir_server.fixtures import medplum_server  # noqa: E402,F401  (the shared Node fixture)
