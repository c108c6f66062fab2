"""The clean memory view: current memories by category, superseded states folded under each chain."""
from __future__ import annotations

import pytest
from django.urls import reverse

from .factories import memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db


def test_current_memories_by_category_with_history_folded(nurse_client):
    patient = patient_create()
    session = session_create(patient=patient)
    memory_create(session=session, content="Took lisinopril daily", status="outdated")
    memory_create(session=session, content="Stopped lisinopril", status="current")
    memory_create(session=session, content="Walks 30 minutes", category="lifestyle", chain_key="")
    memory_create(session=session, content="Withdrawn thing", category="lifestyle", chain_key="", status="revoked")
    response = nurse_client.get(reverse("narrative:patient_memories", args=[patient.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    groups = response.context["groups"]
    assert list(groups) == ["medication", "lifestyle"]
    chain = groups["medication"][0]
    assert chain.current.content == "Stopped lisinopril" and [m.content for m in chain.earlier] == ["Took lisinopril daily"]
    assert "<details>" in body and "Withdrawn thing" not in body


def test_clinician_sees_only_the_launched_patient(clinician_client):
    mine, other = patient_create(), patient_create()
    session = clinician_client.session
    session["smart_patient_pk"] = mine.pk
    session.save()
    assert clinician_client.get(reverse("narrative:patient_memories", args=[mine.pk])).status_code == 200
    assert clinician_client.get(reverse("narrative:patient_memories", args=[other.pk])).status_code == 403
