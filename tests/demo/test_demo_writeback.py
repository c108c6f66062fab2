"""In the demo, a nurse's confirm is written back to the sandbox EHR (Backend Services with system write
scopes; no clinician launch needs to be alive) and can be read back from it."""
from __future__ import annotations

import pytest
import requests
from django.contrib.auth.models import User

from reconcile_app.demo.services import demo_seed
from reconcile_app.smart.backend import backend_token_get
from reconcile_app.smart.models import EhrRegistration, SmartLaunch
from reconcile_app.triage.models import TriageItem, WriteBack
from tests.smart.sandbox_env import eager_celery  # noqa: F401 - fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def test_a_nurse_confirm_is_written_to_the_sandbox_ehr_and_reads_back(client, live_server, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        demo_seed(base_url=live_server.url)
    assert not SmartLaunch.objects.exclude(kind=SmartLaunch.Kind.BACKEND).exists()  # no clinician has launched
    item = TriageItem.objects.filter(status="new").select_related("patient").order_by("pk").first()
    assert item is not None

    client.force_login(User.objects.get(username="nurse"))
    response = client.post(f"/triage/findings/{item.finding_id}/confirm/", {"note": "Spoke to the patient"})
    assert response.status_code == 302

    wb = WriteBack.objects.get(item=item)
    assert wb.status == WriteBack.Status.DONE, wb.last_error
    assert wb.resource_type == "DetectedIssue" and wb.resource_id

    registration = EhrRegistration.objects.get(iss=f"{live_server.url}/sandbox/fhir")
    _, token = backend_token_get(registration=registration)
    read = requests.get(f"{registration.iss}/{wb.resource_type}/{wb.resource_id}", timeout=30,
                        headers={"Authorization": f"Bearer {token}", "Accept": "application/fhir+json"})
    assert read.status_code == 200
    issue = read.json()
    assert issue["resourceType"] == "DetectedIssue"
    assert issue["patient"]["reference"] == f"Patient/{item.patient.fhir_id}"
    found = requests.get(f"{registration.iss}/DetectedIssue", params={"patient": item.patient.fhir_id}, timeout=30,
                         headers={"Authorization": f"Bearer {token}", "Accept": "application/fhir+json"}).json()
    assert [e["resource"]["id"] for e in found["entry"]] == [wb.resource_id]


def test_only_system_create_scopes_count_as_a_write_grant() -> None:
    from reconcile_app.smart.services import backend_can_write

    assert backend_can_write("system/*.rs system/DetectedIssue.c")
    assert backend_can_write("system/DetectedIssue.write") and backend_can_write("system/*.cruds")
    assert not backend_can_write("system/*.rs system/*.read patient/DetectedIssue.c")


def test_withdrawing_the_source_of_a_confirmed_finding_retracts_it_in_the_demo_ehr(client, live_server, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    """The demo's Backend Services grant includes update, so the write-back can be taken back."""
    from reconcile_app.transcripts.services import session_withdraw
    from reconcile_app.triage.models import Retraction

    with django_capture_on_commit_callbacks(execute=True):
        demo_seed(base_url=live_server.url)
    item = TriageItem.objects.filter(status="new", quote_count=1).select_related("patient", "finding").order_by("pk").first()
    client.force_login(User.objects.get(username="nurse"))
    client.post(f"/triage/findings/{item.finding_id}/confirm/", {"note": "Spoke to the patient"})
    wb = WriteBack.objects.get(item=item)
    assert wb.status == WriteBack.Status.DONE, wb.last_error
    session_withdraw(session_id=item.finding.session_id, user=User.objects.get(username="admin"), reason="patient asked")
    retraction = Retraction.objects.get(writeback=wb)
    assert (retraction.status, retraction.method) == ("done", "entered-in-error"), retraction.last_error
    registration = EhrRegistration.objects.get(iss=f"{live_server.url}/sandbox/fhir")
    _, token = backend_token_get(registration=registration)
    read = requests.get(f"{registration.iss}/DetectedIssue/{wb.resource_id}", timeout=30,
                        headers={"Authorization": f"Bearer {token}", "Accept": "application/fhir+json"})
    assert read.json()["status"] == "entered-in-error"
