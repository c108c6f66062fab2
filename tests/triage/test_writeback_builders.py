"""The write-back resources are built as pure data from the finding and its memory."""
from __future__ import annotations

from datetime import datetime, timezone

from reconcile_app.triage.writeback import WriteBackFacts, communication_for, detected_issue_for, task_for

FACTS = WriteBackFacts(
    finding_id=42, patient_fhir_id="pat-a", kind="contradiction", severity="medium", category="medication",
    explanation="Record lists lisinopril as active.", memory_content="Stopped lisinopril", quote="I stopped the lisinopril",
    speaker="patient", mentioned_at=datetime(2026, 1, 5, tzinfo=timezone.utc),
    citations=({"resourceType": "MedicationRequest", "id": "medrx-1", "display": "Lisinopril"}, {"resourceType": "", "id": "x"}),
    identified_at=datetime(2026, 1, 6, 9, 30, tzinfo=timezone.utc), author_reference="Practitioner/prac-1", author_display="Nina Nurse",
)


def test_detected_issue_carries_status_severity_implicated_evidence_and_author():
    issue = detected_issue_for(FACTS)
    assert issue["resourceType"] == "DetectedIssue" and issue["status"] == "final"
    assert issue["severity"] == "moderate"
    assert issue["patient"] == {"reference": "Patient/pat-a"}
    assert issue["implicated"] == [{"reference": "MedicationRequest/medrx-1", "display": "Lisinopril"}]
    assert issue["author"] == {"reference": "Practitioner/prac-1", "display": "Nina Nurse"}
    assert issue["identifiedDateTime"] == "2026-01-06T09:30:00+00:00"
    evidence = [d["display"] for d in issue["evidence"][0]["detail"]]
    assert any("I stopped the lisinopril" in e for e in evidence) and any("Stopped lisinopril" in e for e in evidence)
    assert "Record lists lisinopril as active." in issue["detail"]
    assert issue["identifier"][0]["value"] == "42"


def test_severity_maps_high_and_low():
    from dataclasses import replace

    assert detected_issue_for(replace(FACTS, severity="high"))["severity"] == "high"
    assert detected_issue_for(replace(FACTS, severity="low"))["severity"] == "low"


def test_task_and_communication_fallbacks_reference_the_patient_and_the_cited_resources():
    task = task_for(FACTS)
    assert task["for"] == {"reference": "Patient/pat-a"} and task["focus"]["reference"] == "MedicationRequest/medrx-1"
    assert task["status"] == "requested" and task["intent"] == "order"
    comm = communication_for(FACTS)
    assert comm["subject"] == {"reference": "Patient/pat-a"}
    assert comm["about"] == [{"reference": "MedicationRequest/medrx-1", "display": "Lisinopril"}]
    assert "I stopped the lisinopril" in comm["payload"][0]["contentString"]


def test_without_a_fhir_user_the_author_is_a_display_only():
    from dataclasses import replace

    issue = detected_issue_for(replace(FACTS, author_reference=""))
    assert issue["author"] == {"display": "Nina Nurse"}
