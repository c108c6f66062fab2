"""axe-core over every page each persona reaches in the demo world: no serious or critical violation."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User

from reconcile_app.demo.services import DEMO_PASSWORD, demo_seed
from reconcile_app.fhir.models import Patient
from reconcile_app.smart.models import EhrRegistration
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.triage.models import RoutingRule, TriageItem
from tests.smart.sandbox_env import eager_celery  # noqa: F401 - fixture

from .conftest import Axe, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


@pytest.fixture
def world(live_server, settings, django_capture_on_commit_callbacks) -> Iterator[None]:  # type: ignore[no-untyped-def]
    settings.FRAMED_COOKIES = True
    with django_capture_on_commit_callbacks(execute=True):
        demo_seed(base_url=live_server.url)
    yield


def _visit(page: Any, axe: Axe, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status < 500, (url, response and response.status)
    page.wait_for_load_state("networkidle")
    axe.check(page)


def test_the_nurses_pages(page, axe, world) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "nurse", DEMO_PASSWORD, axe=axe)
    axe.check(page)  # where signing in lands
    patient = Patient.objects.filter(snapshots__isnull=False).first()
    item = TriageItem.objects.order_by("pk").first()
    for url in ("/triage/", "/triage/?safety=yes", "/triage/dashboard/", "/patients/", f"/patients/{patient.pk}/",
                f"/triage/findings/{item.finding_id}/", f"/memories/patients/{patient.pk}/"):
        _visit(page, axe, url)
    _visit(page, axe, "/no-such-page/")  # the 404 page
    _visit(page, axe, "/audit/")  # the 403 page


def test_the_admins_pages(page, axe, world) -> None:  # type: ignore[no-untyped-def]
    sign_in(page, "admin", DEMO_PASSWORD, axe=axe)
    axe.check(page)
    registration = EhrRegistration.objects.first()
    upload = Upload.objects.order_by("pk").first()
    session = Session.objects.order_by("pk").first()
    rule = RoutingRule.objects.order_by("pk").first()
    urls = ["/triage/rules/", "/triage/rules/new/", "/smart/registrations/", "/smart/registrations/new/",
            f"/smart/registrations/{registration.pk}/", "/audit/", "/transcripts/", "/transcripts/new/",
            f"/transcripts/{upload.pk}/", f"/transcripts/sessions/{session.pk}/"]
    if rule is not None:
        urls.append(f"/triage/rules/{rule.pk}/")
    for url in urls:
        _visit(page, axe, url)


def test_the_public_pages(page, axe, world) -> None:  # type: ignore[no-untyped-def]
    for url in ("/login/", "/smart/standalone/", "/smart/launch-again/", "/smart/launch?iss=https://unknown.example/fhir&launch=x",
                "/sandbox/ehr/"):
        _visit(page, axe, url)
    assert User.objects.filter(username="nurse").exists()
