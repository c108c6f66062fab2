"""Workflow buttons: claim, confirm, dismiss (reason required), resolve, escalate, assign, note."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.triage.models import TriageItem

from .factories import item_create

pytestmark = pytest.mark.django_db


def step(finding_id: int, name: str) -> str:
    return reverse("triage:finding_step", args=[finding_id, name])


def status(item) -> str:  # type: ignore[no-untyped-def]
    return TriageItem.objects.get(pk=item.pk).status


def test_claim_then_confirm(nurse_client, nurse):
    item = item_create()
    response = nurse_client.post(step(item.finding_id, "claim"))
    assert response.status_code == 302 and status(item) == "in_review"
    assert TriageItem.objects.get(pk=item.pk).assignee == nurse
    nurse_client.post(step(item.finding_id, "confirm"), {"note": "matches the chart"})
    assert status(item) == "confirmed"


def test_second_claim_is_refused_with_a_message(nurse_client, admin_user):
    from django.test import Client

    other = Client()
    other.force_login(admin_user)
    item = item_create()
    nurse_client.post(step(item.finding_id, "claim"))
    response = other.post(step(item.finding_id, "claim"), follow=True)
    assert b"Refused" in response.content
    assert TriageItem.objects.get(pk=item.pk).assignee.username == "nina"


def test_dismiss_without_a_reason_is_refused(nurse_client):
    item = item_create()
    response = nurse_client.post(step(item.finding_id, "dismiss"), {"reason": ""}, follow=True)
    assert b"needs a reason" in response.content and status(item) == "new"
    nurse_client.post(step(item.finding_id, "dismiss"), {"reason": "patient_misunderstood"})
    assert status(item) == "dismissed"


def test_escalate_assign_note_and_resolve(nurse_client, admin_user):
    item = item_create()
    nurse_client.post(step(item.finding_id, "escalate"))
    assert status(item) == "escalated"
    nurse_client.post(step(item.finding_id, "assign"), {"assignee": admin_user.pk})
    assert TriageItem.objects.get(pk=item.pk).assignee == admin_user
    nurse_client.post(step(item.finding_id, "note"), {"text": "Left a voicemail."})
    assert item.notes.get().text == "Left a voicemail."


def test_unknown_step_is_404_and_get_is_405(nurse_client):
    item = item_create()
    assert nurse_client.post(step(item.finding_id, "delete")).status_code == 404
    assert nurse_client.get(step(item.finding_id, "claim")).status_code == 405


def test_clinician_may_confirm_but_not_claim_or_dismiss(clinician_client):
    item = item_create()
    session = clinician_client.session
    session["smart_patient_pk"] = item.patient_id
    session.save()
    assert clinician_client.post(step(item.finding_id, "claim")).status_code == 403
    assert clinician_client.post(step(item.finding_id, "dismiss"), {"reason": "duplicate"}).status_code == 403
    clinician_client.post(step(item.finding_id, "confirm"))
    assert status(item) == "confirmed"
    clinician_client.post(step(item.finding_id, "resolve"))
    assert status(item) == "resolved"
