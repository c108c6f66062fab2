"""Record pull against a FHIR server we did not write: @medplum/fhir-router with a 2,000+ resource patient."""
from __future__ import annotations

import json
import math
from collections import Counter
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from reconcile_app.fhir.models import Patient, RecordPull
from reconcile_app.fhir.selectors import clinical_record_for, snapshot_latest
from reconcile_app.fhir.services import PULL_SEARCHES, record_pull
from reconcile_app.smart.models import EhrRegistration, SmartLaunch
from tests.fhir_server.fixtures import LARGE_PATIENT, medplum_server  # noqa: F401

pytestmark = [pytest.mark.node, pytest.mark.django_db]
PAGE = 250  # the paging test: Observation alone spans 8 pages
FAST_PAGE = 1000  # the other tests do not test paging: fewer, larger pages keep them quick


def _control(base: str, **faults: object) -> None:
    requests.post(base.rsplit("/fhir", 1)[0] + "/_control", json=faults, timeout=5).raise_for_status()


@pytest.fixture
def medplum(medplum_server, settings):  # type: ignore[no-untyped-def]  # noqa: F811
    base, patient_id = medplum_server
    settings.FHIR_PAGE_SIZE = FAST_PAGE
    _control(base)
    yield base, patient_id
    _control(base)


@pytest.fixture
def launch_and_patient(medplum) -> tuple[SmartLaunch, Patient]:  # type: ignore[no-untyped-def]
    base, patient_id = medplum
    registration = EhrRegistration.objects.create(name="medplum", iss=base, client_id="reconcile")
    launch = SmartLaunch.objects.create(
        registration=registration, kind=SmartLaunch.Kind.EHR, status=SmartLaunch.Status.ACTIVE, patient_fhir_id=patient_id,
        client_state={"server": {"auth": {"access_token": "medplum-test-token"}}},
        expires_at=timezone.now() + timedelta(hours=1),
    )
    return launch, Patient.objects.create(registration=registration, fhir_id=patient_id)


def _expected() -> Counter:
    bundle = json.loads(LARGE_PATIENT.read_text())
    wanted = {t for t, _ in PULL_SEARCHES} | {"Patient"}
    return Counter(e["resource"]["resourceType"] for e in bundle["entry"] if e["resource"]["resourceType"] in wanted)


def test_every_page_of_the_large_record_is_fetched(launch_and_patient, settings) -> None:  # type: ignore[no-untyped-def]
    launch, patient = launch_and_patient
    settings.FHIR_PAGE_SIZE = PAGE
    pull = record_pull(patient=patient, launch=launch)

    assert pull.status == RecordPull.Status.OK, pull.error
    expected = _expected()
    assert sum(expected.values()) > 2000
    assert Counter(pull.snapshot.resource_counts) == expected
    # Patient read + for each search, ceil(n / page) pages (an empty search still answers one page).
    pages = 1 + sum(max(1, math.ceil(expected[t] / PAGE)) for t, _ in PULL_SEARCHES)
    assert pull.pages == pages
    assert pull.resources == sum(expected.values())


def test_an_off_spec_observation_is_tolerated(launch_and_patient) -> None:  # type: ignore[no-untyped-def]
    launch, patient = launch_and_patient
    pull = record_pull(patient=patient, launch=launch)
    assert pull.status == RecordPull.Status.OK
    raw = next(r for r in pull.snapshot.resources if r.get("id") == "obs-offspec-1")
    assert raw["vendorFlag"] is True and raw["valueQuantity"]["value"] == "7.4"  # kept exactly as received
    record = clinical_record_for(snapshot=pull.snapshot)
    assert record.get("Observation", "obs-offspec-1") is not None
    assert record.get("Observation", "obs-error-1").state == "error"  # entered-in-error, excluded from views
    assert "obs-error-1" not in {e.id for e in record.visible()}


def test_a_next_link_to_another_host_is_refused(medplum, launch_and_patient) -> None:  # type: ignore[no-untyped-def]
    base, _ = medplum
    launch, patient = launch_and_patient
    # Nothing listens there: had the link been followed, the error would be a connection failure.
    _control(base, next_base="http://127.0.0.2:9/fhir")
    pull = record_pull(patient=patient, launch=launch)
    assert pull.status == RecordPull.Status.FAILED and not pull.retryable
    assert "another host" in pull.error


def test_a_server_error_keeps_the_previous_snapshot(medplum, launch_and_patient, settings) -> None:  # type: ignore[no-untyped-def]
    base, _ = medplum
    launch, patient = launch_and_patient
    good = record_pull(patient=patient, launch=launch)
    assert good.status == RecordPull.Status.OK
    # Still failing after the page's retries: the pull fails, retryable, and the last good snapshot stays.
    _control(base, fail_status=500, fail_match="Observation", fail_times=1 + settings.FHIR_PAGE_RETRIES)
    bad = record_pull(patient=patient, launch=launch)
    assert bad.status == RecordPull.Status.FAILED and bad.retryable
    assert snapshot_latest(patient=patient).pk == good.snapshot.pk


def test_a_500_mid_pull_is_retried_and_nothing_is_lost_or_doubled(medplum, launch_and_patient, settings) -> None:  # type: ignore[no-untyped-def]
    base, _ = medplum
    launch, patient = launch_and_patient
    settings.FHIR_PAGE_SIZE = 100  # many pages, so the failure lands in the middle of the Observation pages
    good = record_pull(patient=patient, launch=launch)
    _control(base, fail_status=500, fail_match="_offset=", fail_times=settings.FHIR_PAGE_RETRIES)
    again = record_pull(patient=patient, launch=launch)
    assert again.status == RecordPull.Status.OK, again.error
    assert again.resources == good.resources and again.snapshot_id == good.snapshot_id  # same content: same version
    resources = again.snapshot.resources
    assert len({(r["resourceType"], r["id"]) for r in resources}) == len(resources)


def test_a_slow_server_times_out_and_keeps_the_snapshot(medplum, launch_and_patient, settings) -> None:  # type: ignore[no-untyped-def]
    base, _ = medplum
    launch, patient = launch_and_patient
    good = record_pull(patient=patient, launch=launch)
    settings.SMART_HTTP_TIMEOUT_SECONDS = 0.5
    _control(base, delay_ms=1500)
    slow = record_pull(patient=patient, launch=launch)
    assert slow.status == RecordPull.Status.FAILED and slow.retryable
    assert "did not answer in time" in slow.error
    assert snapshot_latest(patient=patient).pk == good.snapshot.pk
