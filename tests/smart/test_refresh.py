"""Token lifetime: refresh after expiry (ahead of time and on a 401), rotation, and Backend Services."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reconcile_app.fhir.models import Patient, RecordPull, RecordSnapshot
from reconcile_app.fhir.services import record_pull
from reconcile_app.fhir.tasks import record_pull_task
from reconcile_app.sandbox.models import SandboxToken
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.services import launch_access_token, launch_token_refresh
from tests.smart.sandbox_env import PATIENT, ehr_launch_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def _launched(browser, live_server) -> SmartLaunch:  # type: ignore[no-untyped-def]
    assert browser.get(ehr_launch_url(live_server), timeout=60).status_code == 200
    return SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR, status=SmartLaunch.Status.ACTIVE)


def test_refresh_after_expiry_keeps_the_first_launch_context(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    launch = _launched(browser, live_server)
    first_token = launch_access_token(launch)
    first_refresh = launch.client_state["server"]["auth"]["refresh_token"]
    SmartLaunch.objects.filter(pk=launch.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    launch.refresh_from_db()

    pull = record_pull(patient=Patient.objects.get(fhir_id=PATIENT), launch=launch)

    launch.refresh_from_db()
    assert pull.status == RecordPull.Status.OK
    assert launch_access_token(launch) not in ("", first_token)
    assert launch.client_state["server"]["auth"]["refresh_token"] != first_refresh  # rotated
    assert launch.expires_at > timezone.now()
    assert launch.patient_fhir_id == PATIENT and launch.fhir_user == "Practitioner/smart-prac-1"


def test_a_401_refreshes_once_and_retries(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    launch = _launched(browser, live_server)
    first_token = launch_access_token(launch)
    # The EHR expires the access token early; our own expiry still says it is fine.
    SandboxToken.objects.filter(kind=SandboxToken.Kind.ACCESS).update(expires_at=timezone.now() - timedelta(seconds=1))

    pull = record_pull(patient=Patient.objects.get(fhir_id=PATIENT), launch=launch)

    launch.refresh_from_db()
    assert pull.status == RecordPull.Status.OK
    assert launch.status == SmartLaunch.Status.ACTIVE and launch_access_token(launch) != first_token


def test_a_refresh_already_done_by_another_worker_is_not_repeated(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    launch = _launched(browser, live_server)
    refreshed = launch_token_refresh(launch_id=launch.pk)
    # A second worker that failed with the old token must take the new one, not spend the rotated refresh token.
    again = launch_token_refresh(launch_id=launch.pk, failed_token=launch_access_token(launch))
    assert launch_access_token(again) == launch_access_token(refreshed)
    assert again.status == SmartLaunch.Status.ACTIVE


def test_backend_services_pull_from_a_celery_task(live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.fhir.services import patient_upsert_from_resource

    patient = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": PATIENT}, registration=sandbox_ehr)
    record_pull_task.delay(patient.pk)

    pull = RecordPull.objects.get(patient=patient)
    assert pull.status == RecordPull.Status.OK and pull.launch is None
    snapshot = RecordSnapshot.objects.get(patient=patient)
    assert snapshot.source == RecordSnapshot.Source.BACKEND
    patient.refresh_from_db()
    assert patient.display_name == "Elena Rivera"  # demographics refreshed from the pulled Patient
    backend = SmartLaunch.objects.get(kind=SmartLaunch.Kind.BACKEND)
    assert backend.scopes_granted == "system/*.rs" and backend.expires_at > timezone.now()
    # The cached system token is reused by the next pull rather than minting a new one.
    record_pull_task.delay(patient.pk)
    assert SmartLaunch.objects.filter(kind=SmartLaunch.Kind.BACKEND).count() == 1
    assert RecordSnapshot.objects.filter(patient=patient).count() == 1  # same content, same version


def test_task_falls_back_to_backend_services_when_the_launch_has_ended(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    launch = _launched(browser, live_server)
    SmartLaunch.objects.filter(pk=launch.pk).update(status=SmartLaunch.Status.EXPIRED)
    patient = Patient.objects.get(fhir_id=PATIENT)
    record_pull_task.delay(patient.pk, launch.pk)
    latest = RecordPull.objects.filter(patient=patient).order_by("-pk").first()
    assert latest.status == RecordPull.Status.OK and latest.launch is None


def test_a_live_user_token_is_available_for_write_back(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.smart.services import launch_bearer_for_patient

    assert launch_bearer_for_patient(registration=sandbox_ehr, patient_fhir_id=PATIENT) is None
    launch = _launched(browser, live_server)
    SmartLaunch.objects.filter(pk=launch.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    token = launch_bearer_for_patient(registration=sandbox_ehr, patient_fhir_id=PATIENT)
    assert token and token != launch_access_token(launch)  # refreshed because it had expired
