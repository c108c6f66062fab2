"""The dashboard: open by severity and age, SLA compliance, dispositions, precision per category."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.triage.services import triage_item_confirm, triage_item_dismiss

from .factories import item_create

pytestmark = pytest.mark.django_db


def test_dashboard_counts_and_precision_from_dispositions(nurse_client, nurse):
    item_create(severity="high")
    a = item_create(category="medication", severity="low", safety_critical=False)
    b = item_create(category="medication", severity="low", safety_critical=False)
    c = item_create(category="medication", severity="low", safety_critical=False)
    triage_item_confirm(item=a, user=nurse)
    triage_item_confirm(item=b, user=nurse)
    triage_item_dismiss(item=c, user=nurse, reason="duplicate")
    response = nurse_client.get(reverse("triage:dashboard"))
    stats = response.context["stats"]
    assert response.status_code == 200
    assert stats["open_total"] == 1 and stats["open_by"]["high"]["< 1 day"] == 1
    medication = next(p for p in stats["precision"] if p["category"] == "medication")
    assert (medication["confirmed"], medication["dismissed"]) == (2, 1)
    assert round(medication["precision"], 3) == 0.667
    assert stats["sla_on_time"] == 3 and stats["sla_compliance"] == 1.0
    assert b"<svg" in response.content and b"<rect" in response.content


def test_the_dashboard_lists_findings_past_their_sla_by_what_they_are(nurse_client):
    from datetime import timedelta

    from django.utils import timezone

    from reconcile_app.triage.models import TriageItem

    late = item_create(severity="high")
    item_create(severity="low", safety_critical=False)
    TriageItem.objects.filter(pk=late.pk).update(sla_due_at=timezone.now() - timedelta(hours=2), summary="Says stopped lisinopril · record: x")
    response = nurse_client.get(reverse("triage:dashboard"))
    assert [row["finding_id"] for row in response.context["overdue"]] == [late.finding_id]
    assert "Says stopped lisinopril · record: x" in response.content.decode()
