"""The first hour, in Chromium against `manage.py demo` as a real process (its own worker, SQLite, the
sandbox EHR): a cross-site framed EHR launch with third-party cookies blocked, the clinician's findings
with their summaries, a nurse's confirm, and the write-back read back from the EHR's chart."""
from __future__ import annotations

import os
import re
import time
from urllib.parse import urlsplit

import pytest

from reconcile_app.demo.services import DEMO_PASSWORD
from tests.demo.process import Demo, demo_process, wait_for_queue  # noqa: F401 - fixture

from .conftest import SCREENSHOTS, new_page, sign_in

pytestmark = pytest.mark.browser

WRITE_BACK_WITHIN_SECONDS = 60


def test_demo_launch_in_a_cross_site_frame_then_a_nurse_confirms_and_the_ehr_shows_the_write_back(chromium, axe, demo_process: Demo) -> None:  # type: ignore[no-untyped-def]
    findings, queued = wait_for_queue(demo_process)
    assert findings and queued, demo_process.log()
    ehr = demo_process.base_url  # http://127.0.0.1:<port>; the demo registers the app on http://localhost:<port>
    os.makedirs(SCREENSHOTS, exist_ok=True)

    # The EHR: its patient list, then the chart of a patient with the app in its frame.
    # The demo's patients and coach live on US Eastern time; so do these browsers (times shown in their zone).
    clinician = new_page(chromium, axe, base_url=ehr, timezone_id="America/New_York")
    clinician.goto("/sandbox/ehr/")
    axe.check(clinician)
    clinician.screenshot(path=os.path.join(SCREENSHOTS, "ehr_patients.png"), full_page=True)
    row = clinician.locator("tr[data-patient]", has_text="Denise")
    patient_fhir_id = row.get_attribute("data-patient")
    row.get_by_role("button", name="Launch reconcile").click()
    clinician.wait_for_url("**/sandbox/ehr/patients/**")
    axe.check(clinician, exclude=["iframe"])
    frame = clinician.locator("iframe.ehr-frame").element_handle().content_frame()
    frame.wait_for_url("**/triage/patient/")
    frame.wait_for_load_state("networkidle")
    axe.check(frame)
    assert urlsplit(clinician.url).hostname == "127.0.0.1" and urlsplit(frame.url).hostname == "localhost"

    # The clinician's findings for this patient, each saying what it is.
    # (decided findings sit in a closed <details> below: hidden rows have no text to read)
    rows = frame.locator("tr[data-row] >> visible=true")
    assert rows.count() > 0
    summaries = [rows.nth(i).locator("td.summary a").inner_text().strip() for i in range(rows.count())]
    assert all(len(s) > 15 and not re.fullmatch(r"#?\d+", s) for s in summaries), summaries
    assert frame.locator("[data-safety-context] li").count() > 0
    clinician.screenshot(path=os.path.join(SCREENSHOTS, "ehr_launch.png"), full_page=True)
    open_row = rows.filter(has=frame.locator("td", has_text=re.compile(r"^New$"))).first
    finding_url = open_row.locator("td.summary a").get_attribute("href")
    finding_id = int(re.search(r"/triage/findings/(\d+)/", finding_url).group(1))

    # A nurse, signed in on the app's own site: the queue, then the finding, confirmed.
    nurse = new_page(chromium, axe, base_url=ehr, timezone_id="America/New_York")
    sign_in(nurse, "nurse", DEMO_PASSWORD, axe=axe)
    nurse.wait_for_url("**/triage/")
    axe.check(nurse)
    nurse.select_option("#id_safety", "yes")
    nurse.wait_for_url("**safety=yes**")
    nurse.wait_for_load_state("networkidle")
    axe.check(nurse)
    nurse.screenshot(path=os.path.join(SCREENSHOTS, "queue.png"), full_page=True)
    nurse.goto(f"/triage/findings/{finding_id}/")
    axe.check(nurse)
    nurse.screenshot(path=os.path.join(SCREENSHOTS, "finding.png"), full_page=True)
    writes_before = _app_writes(demo_process, patient_fhir_id)
    nurse.click("#confirm")
    nurse.wait_for_load_state("networkidle")
    axe.check(nurse)
    assert nurse.locator("#item-status").inner_text() == "Confirmed"

    # The demo's worker writes it back; the EHR's chart lists what apps wrote for the patient.
    chart = f"/sandbox/ehr/patients/{patient_fhir_id}/"
    written = clinician.locator(f'[data-from-apps] li[data-identifier="{finding_id}"]')
    deadline = time.monotonic() + WRITE_BACK_WITHIN_SECONDS
    # First on the demo's database, cheaply: every chart visit is an EHR page plus a fresh launch in its frame.
    while _app_writes(demo_process, patient_fhir_id) <= writes_before and time.monotonic() < deadline:
        time.sleep(0.5)
    while True:
        clinician.goto(chart)
        if written.count() or time.monotonic() > deadline:
            break
        time.sleep(2)
    axe.check(clinician, exclude=["iframe"])
    assert written.count() == 1, demo_process.log()[-3000:]
    assert (written.get_attribute("data-resource") or "").startswith("DetectedIssue/")
    frame = clinician.locator("iframe.ehr-frame").element_handle().content_frame()
    frame.wait_for_url("**/triage/patient/")  # each chart visit is a fresh launch
    axe.check(frame)


def _app_writes(demo: Demo, patient_fhir_id: str) -> int:
    """How many DetectedIssues the apps have written to the sandbox EHR for this patient."""
    assert re.fullmatch(r"[A-Za-z0-9.\-]{1,64}", patient_fhir_id)  # a FHIR id: safe inside the SQL text
    rows = demo.query("SELECT COUNT(*) FROM sandbox_sandboxresource "
                      f"WHERE resource_type = 'DetectedIssue' AND patient_id = '{patient_fhir_id}'")
    return rows[0][0] if rows else 0
