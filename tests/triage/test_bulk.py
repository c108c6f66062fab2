"""Bulk assign and dismiss from the queue."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.triage.models import TriageItem

from .factories import item_create

pytestmark = pytest.mark.django_db
URL = reverse("triage:bulk")


def test_bulk_assign_and_dismiss(nurse_client, nurse):
    a, b = item_create(), item_create()
    nurse_client.post(URL, {"op": "assign", "ids": [a.finding_id, b.finding_id], "assignee": nurse.pk})
    assert set(TriageItem.objects.values_list("assignee", flat=True)) == {nurse.pk}
    response = nurse_client.post(URL, {"op": "dismiss", "ids": [a.finding_id], "reason": "already_known",
                                       "back": reverse("triage:queue") + "?safety=yes"})
    assert response["Location"] == reverse("triage:queue") + "?safety=yes"
    assert TriageItem.objects.get(pk=a.pk).status == "dismissed"


def test_bulk_dismiss_needs_a_reason_and_never_redirects_off_site(nurse_client):
    a = item_create()
    response = nurse_client.post(URL, {"op": "dismiss", "ids": [a.finding_id], "back": "https://evil.example/"})
    assert response["Location"] == reverse("triage:queue")
    assert TriageItem.objects.get(pk=a.pk).status == "new"
