"""End to end in Chromium: the nurse's review, an admin's routing rule with preview, a launched clinician."""
from __future__ import annotations

import os
from datetime import timedelta

import pytest
from playwright.sync_api import expect
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone

from reconcile_app.triage.models import TriageItem
from tests.triage.factories import item_create, memory_create, patient_create, session_create

from .conftest import SCRATCH_SCREENSHOTS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _queue_world() -> TriageItem:
    now = timezone.now()
    names = ["Maria Lopez", "James Okafor", "Wei Chen", "Fatima Haddad", "Tom Becker"]
    patients = [patient_create(name=n) for n in names]
    critical = item_create(patient=patients[0], severity="high", safety_critical=True, created_at=now - timedelta(hours=5))
    item_create(patient=patients[1], severity="medium", safety_critical=True, category="allergy", kind="gap",
                citations=[{"resourceType": "AllergyIntolerance", "id": "allergy-pcn"}], created_at=now - timedelta(days=1))
    item_create(patient=patients[2], severity="high", safety_critical=False, created_at=now - timedelta(days=2))
    item_create(patient=patients[3], severity="medium", safety_critical=False, category="condition",
                citations=[{"resourceType": "Condition", "id": "cond-t2dm"}], created_at=now - timedelta(days=3))
    item_create(patient=patients[4], severity="low", safety_critical=False, kind="gap", created_at=now - timedelta(days=9))
    return critical


def test_nurse_filters_to_safety_critical_reviews_side_by_side_claims_and_confirms(page, axe, nurse):
    critical = _queue_world()
    sign_in(page, "nina", axe=axe)
    page.goto("/triage/")
    axe.check(page)
    assert page.locator("tr[data-row]").count() == 5
    page.select_option("#id_safety", "yes")
    expect(page.locator("tr[data-row]")).to_have_count(2)  # the htmx swap landed
    assert "safety=yes" in page.url  # htmx pushed the filter into the address bar
    axe.check(page)
    page.screenshot(path=os.path.join(SCRATCH_SCREENSHOTS, "queue.png"), full_page=True)
    # keyboard: j focuses the first row, Enter opens it
    page.locator("body").press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/triage/findings/{critical.finding_id}/")
    axe.check(page)
    memory, record = page.locator("#memory-side"), page.locator("#record-side")
    assert memory.is_visible() and record.is_visible()
    assert "I stopped the lisinopril" in memory.inner_text()
    assert "Lisinopril 10 mg tablet" in record.inner_text() and "RXNORM" in record.inner_text()
    left, right = memory.bounding_box(), record.bounding_box()
    assert left["x"] + left["width"] <= right["x"]  # truly side by side
    assert page.locator(".turn.highlight").count() == 1
    assert page.locator("[aria-label='Safety context']").is_visible()
    page.screenshot(path=os.path.join(SCRATCH_SCREENSHOTS, "finding.png"), full_page=True)
    page.click("#claim")
    page.wait_for_load_state("networkidle")
    axe.check(page)
    assert page.locator("#item-status").inner_text() == "In review"
    page.click("#confirm")
    page.wait_for_load_state("networkidle")
    axe.check(page)
    assert page.locator("#item-status").inner_text() == "Confirmed"
    assert TriageItem.objects.get(pk=critical.pk).status == "confirmed"


def test_admin_writes_a_routing_rule_and_sees_its_preview(page, axe, admin_user):
    _queue_world()
    sign_in(page, "ada", axe=axe)
    axe.check(page)  # the admin's landing page
    page.goto("/triage/rules/new/")
    axe.check(page)
    page.fill("#id_name", "Allergy gaps to the allergy desk")
    page.fill("#id_queue", "Allergy desk")
    page.select_option("#id_match_kind", "gap")
    expect(page.locator("#preview-count")).to_have_text("2")
    page.select_option("#id_match_category", "allergy")
    expect(page.locator("#preview-count")).to_have_text("1")
    assert "allergy" in page.locator("#rule-preview").inner_text()
    axe.check(page)
    page.click("#save-rule")
    page.wait_for_url("**/triage/rules/")
    axe.check(page)
    assert "Allergy gaps to the allergy desk" in page.locator("table").inner_text()


def test_a_launched_clinician_sees_only_that_patient(page, axe, clinician):
    mine = patient_create(name="Launched Patient")
    other = patient_create(name="Someone Else")
    item_create(patient=mine)
    theirs = item_create(patient=other)
    session = session_create(patient=mine)
    memory_create(session=session, content="Walks every evening", category="lifestyle", chain_key="")
    sign_in(page, "carla", axe=axe)
    axe.check(page)
    # Simulate the SMART launch: bind the patient to this browser's server-side session.
    cookie = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    store = SessionStore(session_key=cookie["value"])
    store["smart_patient_pk"] = mine.pk
    store.save()
    page.goto("/triage/patient/")
    axe.check(page)
    text = page.locator("main").inner_text()
    assert "Launched Patient" in text and "Someone Else" not in text
    assert page.locator("tr[data-row]").count() == 1
    response = page.goto(f"/triage/findings/{theirs.finding_id}/")
    assert response.status == 403
    axe.check(page)
    assert page.goto("/triage/").status == 403
    axe.check(page)
    assert page.goto(f"/memories/patients/{mine.pk}/").status == 200
    axe.check(page)
    assert "Walks every evening" in page.locator("main").inner_text()
    assert page.goto(f"/memories/patients/{other.pk}/").status == 403
    axe.check(page)
