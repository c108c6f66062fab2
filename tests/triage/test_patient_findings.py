"""The clinician's view: only the launched patient's findings."""
from __future__ import annotations

import pytest
from django.urls import reverse

from .factories import item_create

pytestmark = pytest.mark.django_db
URL = reverse("triage:patient_findings")


def launch(client, patient_pk: int) -> None:  # type: ignore[no-untyped-def]
    session = client.session
    session["smart_patient_pk"] = patient_pk
    session.save()


def test_clinician_sees_only_the_launched_patient(clinician_client):
    mine, other = item_create(), item_create()
    launch(clinician_client, mine.patient_id)
    response = clinician_client.get(URL)
    assert response.status_code == 200
    assert [i.finding_id for i in response.context["items"]] == [mine.finding_id]
    assert reverse("triage:finding_detail", args=[other.finding_id]).encode() not in response.content


def test_without_a_launch_the_page_is_refused(clinician_client):
    assert clinician_client.get(URL).status_code == 403


def test_each_finding_says_what_it_is_in_one_line(clinician_client):
    from .factories import memory_create, patient_create, session_create

    patient = patient_create()
    session = session_create(patient=patient)
    memory = memory_create(session=session, attributes={"drug": "lisinopril", "action": "stopped"})
    item_create(patient=patient, session=session, memory=memory)
    launch(clinician_client, patient.pk)
    body = clinician_client.get(URL).content.decode()
    assert "Says stopped lisinopril about two weeks ago · record: Lisinopril 10 mg tablet active" in body
