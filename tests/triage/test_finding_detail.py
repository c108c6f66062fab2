"""The side-by-side finding: memory with its highlighted turns next to the cited record entries."""
from __future__ import annotations

import pytest
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent

from .factories import finding_create, item_create, memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db


def test_memory_and_record_side_by_side_with_safety_context(nurse_client):
    item = item_create()
    response = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id]))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="memory-side"' in body and 'id="record-side"' in body
    # quoted turn highlighted in its conversation, with its neighbours
    assert 'class="turn highlight"' in body and "How have the blood pressure pills been going?" in body
    assert "I stopped the lisinopril about two weeks ago, the cough" in body
    # the cited resource rendered for people
    assert "Lisinopril 10 mg tablet" in body and "RXNORM" in body and "314076" in body
    assert "1 tablet by mouth daily" in body and "Dr. Rivera" in body and "2025-06-01" in body
    # explanation, rule, engine version, and the mandatory safety context
    assert "med.stopped_active" in body and "The record lists lisinopril as active" in body
    assert "Safety context" in body and "Penicillin" in body and "Type 2 diabetes mellitus" in body
    assert AuditEvent.objects.filter(action="triage.finding_view", patient_pk=item.patient_id).exists()


def test_memory_history_and_earlier_findings_on_the_same_resource(nurse_client):
    patient = patient_create()
    first_session = session_create(patient=patient)
    earlier_memory = memory_create(session=first_session, content="Taking lisinopril every morning", status="outdated")
    earlier = item_create(patient=patient, session=first_session, memory=earlier_memory)
    session = session_create(patient=patient)
    memory = memory_create(session=session)
    item = item_create(patient=patient, session=session, memory=memory)
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "Taking lisinopril every morning" in body
    assert reverse("triage:finding_detail", args=[earlier.finding_id]) in body


def test_citation_missing_from_the_snapshot_is_said_plainly(nurse_client):
    item = item_create(citations=[{"resourceType": "Condition", "id": "nope", "display": "Ghost"}])
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "Not in the record snapshot" in body


def test_non_discrepancy_findings_have_no_page(nurse_client):
    agreement = finding_create(kind="agreement", severity="low", safety_critical=False)
    assert nurse_client.get(reverse("triage:finding_detail", args=[agreement.pk])).status_code == 404


def test_an_explanation_cut_by_the_engine_is_shown_as_whole_sentences(nurse_client):
    from reconcile_app.reconciliation.models import Finding

    item = item_create()
    cut = ("Patient reports taking st john's wort (an undocumented medicine or supplement); the record has no entry for it. "
           "Interaction: St John's wort with an SSRI risks serotonin syndrome. Interaction: St John's wort with an antidepressant "
           "risks serotonin syndrome. Interaction: St John's wort lowers tacrolimu")
    Finding.objects.filter(pk=item.finding_id).update(explanation=cut)
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    explanation = body.split('id="explanation">')[1].split("</p>")[0]
    assert "tacrolimu" not in explanation and "antidepressant risks serotonin syndrome." in explanation
    assert "The engine cut the rest of this explanation short" in explanation


def test_the_page_leads_with_the_one_line_summary(nurse_client):
    patient = patient_create()
    session = session_create(patient=patient)
    memory = memory_create(session=session, attributes={"drug": "lisinopril", "action": "stopped"})
    item = item_create(patient=patient, session=session, memory=memory)
    body = nurse_client.get(reverse("triage:finding_detail", args=[item.finding_id])).content.decode()
    assert "<h1>Says stopped lisinopril about two weeks ago · record: Lisinopril 10 mg tablet active</h1>" in body
