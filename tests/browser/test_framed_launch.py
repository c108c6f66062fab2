"""A SMART EHR launch inside the EHR's iframe, from another site, in Chromium with third-party cookies
blocked: the EHR on 127.0.0.1, the app on localhost (the same live server under two site names)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from reconcile_app.demo.services import demo_seed
from reconcile_app.smart.models import SmartLaunch
from tests.smart.sandbox_env import eager_celery  # noqa: F401 - fixture

from .conftest import Axe, new_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


@pytest.fixture
def ehr(live_server, settings, django_capture_on_commit_callbacks) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The demo world with the EHR at http://127.0.0.1:<port>; it registers the app at http://localhost:<port>."""
    settings.FRAMED_COOKIES = True
    port = urlsplit(live_server.url).port
    base = f"http://127.0.0.1:{port}"
    with django_capture_on_commit_callbacks(execute=True):
        demo_seed(base_url=base)
    yield base


def framed_launch(page: Any, axe: Axe, *, ehr: str, patient: str = "Denise") -> Any:
    """Open the EHR's patient list, launch the app for a patient and return the app's frame once it lands."""
    page.goto(f"{ehr}/sandbox/ehr/")
    axe.check(page)
    page.locator("tr", has_text=patient).get_by_role("button", name="Launch reconcile").click()
    page.wait_for_url("**/sandbox/ehr/patients/**")
    axe.check(page, exclude=["iframe"])  # the frame is another document, checked on its own
    frame = page.locator("iframe.ehr-frame").element_handle().content_frame()
    frame.wait_for_load_state("load")
    return frame


def test_a_cross_site_framed_launch_signs_in_and_lands_on_the_patients_findings(chromium, axe, ehr) -> None:  # type: ignore[no-untyped-def]
    page = new_page(chromium, axe, base_url=ehr)
    frame = framed_launch(page, axe, ehr=ehr)
    frame.wait_for_url("**/triage/patient/")
    axe.check(frame)
    assert urlsplit(page.url).hostname == "127.0.0.1" and urlsplit(frame.url).hostname == "localhost"  # two sites
    assert frame.locator("tr[data-row]").count() > 0  # the patient's findings, where the clinician lands
    assert "Denise" in frame.locator("[data-patient-banner]").inner_text()
    assert frame.locator("[data-safety-context] li").count() > 0
    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR, status=SmartLaunch.Status.ACTIVE)
    assert launch.user.get_full_name() and launch.user.get_full_name() in frame.locator("header").inner_text()
    # The cookies that carried the sign-in are partitioned under the EHR's site.
    cookies = {c["name"]: c for c in page.context.cookies() if c["domain"] == "localhost"}
    assert cookies["sessionid"].get("partitionKey") == "http://127.0.0.1"
    assert cookies["sessionid"]["sameSite"] == "None" and cookies["sessionid"]["secure"]

    frame.get_by_role("link", name="Record", exact=True).click()
    frame.wait_for_url("**/patients/*/")
    axe.check(frame)
    assert frame.locator("#record-body").count() == 1 and frame.locator("[data-safety-context] li").count() > 0


def test_without_partitioned_cookies_the_blocked_frame_cannot_sign_in(chromium, axe, ehr, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The control: SameSite=None; Secure alone (what the app sent before) is blocked in the frame."""
    from reconcile_app.smart.middleware import PartitionedMorsel

    monkeypatch.setattr(PartitionedMorsel, "OutputString", lambda self, attrs=None: super(PartitionedMorsel, self).OutputString(attrs))
    page = new_page(chromium, axe, base_url=ehr)
    frame = framed_launch(page, axe, ehr=ehr)
    frame.wait_for_url("**/smart/callback**")
    axe.check(frame)
    assert frame.locator("[data-launch-error]").get_attribute("data-launch-error") == "cookies_blocked"
    assert not SmartLaunch.objects.filter(status=SmartLaunch.Status.ACTIVE).exclude(kind=SmartLaunch.Kind.BACKEND).exists()
