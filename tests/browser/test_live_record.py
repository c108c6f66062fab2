"""A first pull, seen in the browser: the page says the record is loading, then banner, safety context and
record arrive together when the pull finishes, with no reload."""
from __future__ import annotations

import json

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from reconcile_app.fhir.models import Patient, RecordPull
from reconcile_app.fhir.services import patient_upsert_from_resource, snapshot_store
from tests.fhir.test_clinical import ENCOUNTER_DIAGNOSES

from .conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("path", ["record", "memories"])
def test_the_pages_fill_in_when_the_first_pull_finishes(page, axe, nurse, path: str) -> None:  # type: ignore[no-untyped-def]
    patient = Patient.objects.create(fhir_id="ed-pat-1")  # known by id only, as right after a launch
    pull = RecordPull.objects.create(patient=patient)
    sign_in(page, "nina", axe=axe)
    axe.check(page)
    page.goto(f"/patients/{patient.pk}/" if path == "record" else f"/memories/patients/{patient.pk}/")
    axe.check(page)
    expect(page.locator("[data-safety-loading]")).to_be_visible()
    page.evaluate("window.__same_document = true")  # gone if the page reloads

    resources = [e["resource"] for e in json.loads(ENCOUNTER_DIAGNOSES.read_text())["entry"]]
    patient = patient_upsert_from_resource(resource=resources[0])
    snapshot = snapshot_store(patient=patient, resources=resources, source="bundle")
    RecordPull.objects.filter(pk=pull.pk).update(status="ok", finished_at=timezone.now(), snapshot=snapshot, resources=len(resources))

    safety = page.locator("[data-safety-context]")
    expect(safety).to_contain_text("Atrial fibrillation", timeout=10_000)
    expect(safety).to_contain_text("apixaban 5 MG Oral Tablet")
    expect(page.locator("[data-patient-banner]")).to_contain_text("Rosa Marchetti")
    if path == "record":
        expect(page.locator("#record-body")).to_contain_text("Version 1")
        expect(page.locator("#record-body")).to_contain_text("Pneumonia")  # resolved: in the record, not the panel
        assert page.locator("[data-pull-running]").count() == 0
    assert page.evaluate("window.__same_document === true")
    assert page.locator("[data-live-poll]").count() == 0  # polling stopped
    axe.check(page)
