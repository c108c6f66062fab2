"""Care-team alerts show on the queue until acknowledged."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.triage.models import TriageAlert

from .factories import item_create

pytestmark = pytest.mark.django_db


def test_alert_is_listed_then_acknowledged(nurse_client, nurse):
    item = item_create(safety_critical=True)
    alert = TriageAlert.objects.get(item=item)
    assert alert in nurse_client.get(reverse("triage:queue")).context["alerts"]
    nurse_client.post(reverse("triage:alert_ack", args=[alert.pk]))
    alert.refresh_from_db()
    assert alert.acknowledged_by == nurse
    assert not nurse_client.get(reverse("triage:queue")).context["alerts"]
