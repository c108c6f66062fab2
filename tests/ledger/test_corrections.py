"""Corrections: a clinician or nurse says a memory is wrong and what is right; the correction links to
the original and both wait for review; someone else accepts (the correction is reconciled through the
engine and its finding supersedes the original's, whose open item closes) or rejects it. A patient's
correction arrives through the coaching platform API and enters as needs review."""
from __future__ import annotations

import json

import pytest
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create
from reconcile_app.narrative.models import Memory
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.services import platform_create, platform_enrol
from reconcile_app.triage.models import TriageItem
from tests.triage.factories import finding_create, item_create, memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_nurse(db):  # type: ignore[no-untyped-def]
    return user_create(username="noor", role=Role.NURSE, password="correct horse battery staple", full_name="Noor Nurse")


def test_a_nurse_corrects_a_memory_and_another_accepts_it_and_the_contradiction_it_raised_closes(nurse_client, second_nurse, client) -> None:  # type: ignore[no-untyped-def]
    item = item_create()  # the patient 'stopped lisinopril'; the record has it active: a contradiction
    original = item.finding.memory
    response = nurse_client.post(reverse("ledger:memory_correct", args=[original.pk]), {
        "content": "I still take my lisinopril every morning.", "subject": "patient", "assertion": "affirmed",
        "note": "misheard: it was the metformin she stopped"})
    assert response.status_code == 302
    correction = Memory.objects.get(corrects=original)
    original.refresh_from_db()
    assert (original.status, correction.status, correction.origin) == ("needs_review", "needs_review", "staff_correction")
    assert correction.attributes.get("drug") == "lisinopril"  # read by the extraction engine
    own = nurse_client.post(reverse("ledger:correction_review", args=[correction.pk]), {"decision": "accept"}, follow=True)
    assert "other than its author" in own.content.decode()
    correction.refresh_from_db()
    assert correction.status == "needs_review"

    client.force_login(second_nurse)
    listed = client.get(reverse("ledger:correction_list"))
    assert correction in listed.context["pending"]
    client.post(reverse("ledger:correction_review", args=[correction.pk]), {"decision": "accept", "note": "checked with the patient"})
    original.refresh_from_db(), correction.refresh_from_db()
    assert (original.status, correction.status) == ("corrected", "current")
    old = Finding.objects.get(pk=item.finding_id)
    new = Finding.objects.get(memory=correction)
    assert (old.status, old.superseded_by_id, old.closed_reason) == ("superseded", new.pk, "memory_corrected")
    assert new.kind == "agreement" and new.run.purpose == "memory_change"
    item.refresh_from_db()
    assert item.status == "resolved" and item.events.filter(action="memory_corrected").exists()
    assert AuditEvent.objects.filter(action="ledger.correction_accept", actor=second_nurse).exists()


def test_a_rejected_correction_leaves_the_original_and_its_finding_standing(nurse_client, second_nurse, client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("reconcile_app.narrative.services._correction_draft", lambda **kwargs: None)
    item = item_create()
    original = item.finding.memory
    nurse_client.post(reverse("ledger:memory_correct", args=[original.pk]), {"content": "Never took it", "subject": "patient",
                                                                             "assertion": "negated"})
    correction = Memory.objects.get(corrects=original)
    client.force_login(second_nurse)
    client.post(reverse("ledger:correction_review", args=[correction.pk]), {"decision": "reject", "note": "the patient confirmed"})
    original.refresh_from_db(), correction.refresh_from_db()
    assert (original.status, correction.status) == ("current", "rejected")
    item.refresh_from_db()
    assert item.status == "new" and Finding.objects.get(pk=item.finding_id).status == "current"


def test_admins_do_not_correct_and_clinicians_only_for_the_launched_patient(admin_client, clinician_client) -> None:  # type: ignore[no-untyped-def]
    memory = memory_create(session=session_create(patient=patient_create()))
    assert admin_client.get(reverse("ledger:memory_correct", args=[memory.pk])).status_code == 403
    assert clinician_client.get(reverse("ledger:memory_correct", args=[memory.pk])).status_code == 403
    session = clinician_client.session
    session["smart_patient_pk"] = memory.patient_id
    session.save()
    assert clinician_client.get(reverse("ledger:memory_correct", args=[memory.pk])).status_code == 200


def _platform_with_statement():  # type: ignore[no-untyped-def]
    platform, token = platform_create(name="Acme Coaching")
    patient = patient_create()
    platform_enrol(platform=platform, patient=patient)
    finding = finding_create(patient=patient, session=session_create(patient=patient, platform=platform))
    return platform, token, patient, finding


def _post(client, token: str, body: dict):  # type: ignore[no-untyped-def]
    return client.post("/api/corrections", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_patients_correction_through_the_platform_api_enters_as_needs_review(client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("reconcile_app.narrative.services._correction_draft", lambda **kwargs: None)
    platform, token, patient, finding = _platform_with_statement()
    response = _post(client, token, {"patient_ref": patient.reference, "request_id": f"finding-{finding.pk}",
                                     "content": "I only skipped it for two days, I still take it."})
    assert response.status_code == 202, response.content
    body = response.json()
    correction = Memory.objects.get(pk=body["correction"])
    assert (body["status"], correction.origin, correction.corrects_id) == ("needs_review", "patient_correction", finding.memory_id)
    assert correction.events.get().actor_label == f"platform #{platform.pk}"
    # By session and turn, as the clarification request named them.
    memory = finding.memory
    memory.refresh_from_db()
    assert memory.status == "needs_review"


def test_the_platform_api_reveals_nothing_about_other_platforms_or_patients(client) -> None:  # type: ignore[no-untyped-def]
    _, token, patient, finding = _platform_with_statement()
    other_patient, other_finding = _other()
    for body in (
        {"patient_ref": patient.reference, "request_id": f"finding-{other_finding.pk}", "content": "x"},  # another platform's finding
        {"patient_ref": other_patient.reference, "request_id": f"finding-{other_finding.pk}", "content": "x"},  # not enrolled
        {"patient_ref": "Patient/nobody", "request_id": f"finding-{finding.pk}", "content": "x"},
        {"patient_ref": patient.reference, "session_id": finding.session.external_id, "turn_id": "no-such-turn", "content": "x"},
    ):
        response = _post(client, token, body)
        assert response.status_code == 404 and response.json() == {"error": "no statement of a patient enrolled for this platform matches"}
    assert _post(client, "wrong", {"content": "x"}).status_code == 401
    invalid = _post(client, token, {"patient_ref": patient.reference, "content": "x"})
    assert invalid.status_code == 422 and "__all__" in invalid.json()["errors"]
    assert not Memory.objects.filter(origin="patient_correction").exists()


def _other():  # type: ignore[no-untyped-def]
    platform, _ = platform_create(name="Other Coaching")
    patient = patient_create()
    platform_enrol(platform=platform, patient=patient)
    return patient, finding_create(patient=patient, session=session_create(patient=patient, platform=platform))


def test_a_correction_by_session_and_turn_finds_the_statement_anchored_there(client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("reconcile_app.narrative.services._correction_draft", lambda **kwargs: None)
    _, token, patient, finding = _platform_with_statement()
    memory = finding.memory
    response = _post(client, token, {"patient_ref": patient.reference, "session_id": finding.session.external_id,
                                     "turn_id": memory.turn_ids[0], "content": "I stopped it a month ago, not two weeks."})
    assert response.status_code == 202 and response.json()["corrects"] == memory.pk
    assert TriageItem.objects.count() == 0  # nothing routed until someone accepts it
