"""Care-team alerts: on the queue until acknowledged (which says so) or closed with their finding's decision;
"sent" only when the email reached an address."""
from __future__ import annotations

import pytest
from django.core import mail
from django.test import override_settings
from django.urls import reverse

from reconcile_app.triage import services
from reconcile_app.triage.models import TriageAlert

from .factories import item_create

pytestmark = pytest.mark.django_db


def _alerts(client) -> list[TriageAlert]:  # type: ignore[no-untyped-def]
    return [alert for alert, _ in client.get(reverse("triage:queue")).context["alerts"]]


def test_alert_is_listed_then_acknowledged_with_a_visible_confirmation(nurse_client, nurse):
    item = item_create(safety_critical=True)
    alert = TriageAlert.objects.get(item=item)
    assert alert in _alerts(nurse_client)
    page = nurse_client.post(reverse("triage:alert_ack", args=[alert.pk]), follow=True)
    assert f"Alert acknowledged: finding #{item.finding_id}" in page.content.decode()
    alert.refresh_from_db()
    assert alert.acknowledged_by == nurse
    assert not _alerts(nurse_client)
    again = nurse_client.post(reverse("triage:alert_ack", args=[alert.pk]), follow=True)
    assert "Already acknowledged by Nina Nurse" in again.content.decode()


@pytest.mark.parametrize("decide", ["dismiss", "resolve", "confirm"])
def test_an_alert_closes_with_its_findings_decision(nurse_client, nurse, decide):
    item = item_create(safety_critical=True)
    step = {"dismiss": lambda: services.triage_item_dismiss(item=item, user=nurse, reason="duplicate"),
            "resolve": lambda: services.triage_item_resolve(item=item, user=nurse),
            "confirm": lambda: services.triage_item_confirm(item=item, user=nurse)}
    step[decide]()
    alert = TriageAlert.objects.get(item=item)
    assert alert.closed_at is not None and alert.closed_reason == {"dismiss": "dismissed", "resolve": "resolved", "confirm": "confirmed"}[decide]
    assert not _alerts(nurse_client)


def test_an_alert_with_no_address_to_email_says_it_was_not_sent_and_why(nurse_client):
    item = item_create(safety_critical=True)  # the nurse persona has no email address
    alert = TriageAlert.objects.get(item=item)
    assert (alert.email_status, alert.email_recipients) == ("not_sent", 0) and "no email address" in alert.email_note
    item.refresh_from_db()
    assert item.action_status == "not_configured"
    assert not mail.outbox
    html = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "In-app alert only: email not sent" in html and "Sent by email" not in html
    assert "email not sent: no email address" in nurse_client.get(reverse("triage:queue")).content.decode().lower()


@override_settings(TRIAGE_ALERT_EMAILS=["ward@example.org", "lead@example.org"])
def test_an_alert_that_reached_addresses_is_sent(nurse_client):
    item = item_create(safety_critical=True)
    alert = TriageAlert.objects.get(item=item)
    assert (alert.email_status, alert.email_recipients) == ("sent", 2)
    item.refresh_from_db()
    assert item.action_status == "done"
    assert "Sent by email" in nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert mail.outbox[0].to == ["ward@example.org", "lead@example.org"]
