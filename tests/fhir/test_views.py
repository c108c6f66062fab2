"""Patient pages: who may see which patient, the mandatory safety context, and the status-aware record."""
from __future__ import annotations

import json

import pytest

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.services import patient_upsert_from_resource, snapshot_store
from tests.fhir.test_clinical import ENCOUNTER_DIAGNOSES
from tests.smart.sandbox_env import OTHER_PATIENT, PATIENT, RECORDS


def _load(fhir_id: str) -> Patient:
    """One patient's part of the test record, stored as a local snapshot."""
    resources = [e["resource"] for e in json.loads(RECORDS.read_text())["entry"]]
    mine = [r for r in resources if r.get("id") == fhir_id or json.dumps(r).find(f'"Patient/{fhir_id}"') >= 0]
    patient = patient_upsert_from_resource(resource=next(r for r in mine if r["resourceType"] == "Patient"))
    snapshot_store(patient=patient, resources=mine, source="bundle")
    return patient


@pytest.fixture
def elena(db: None) -> Patient:
    return _load(PATIENT)


@pytest.fixture
def samuel(db: None) -> Patient:
    return _load(OTHER_PATIENT)


def test_nurse_sees_the_status_aware_record_with_safety_context(nurse_client, elena: Patient) -> None:  # type: ignore[no-untyped-def]
    response = nurse_client.get(f"/patients/{elena.pk}/")
    text = response.content.decode()
    assert response.status_code == 200
    safety = text[text.index("data-safety-context"):text.index("</section>", text.index("data-safety-context"))]
    assert "Penicillin" in safety and "Hives" in safety
    assert "Metformin 500 mg tablet" in safety and "500 mg twice daily with meals" in safety
    assert "Diabetes mellitus type 2" in safety and "Female" in safety
    assert "Glipizide" not in safety and "Acute bronchitis" not in safety  # historical, not active
    assert "Glipizide 5 mg tablet" in text and "Acute bronchitis" in text  # but shown as history
    assert "Latex" in text  # inactive allergy, in its own section
    assert "Warfarin" not in text  # entered-in-error: excluded everywhere
    assert "3 values" in text and "6.9 %" in text  # latest HbA1c with its history
    assert "data-patient-banner" in text and "MRN-1001" in text
    assert AuditEvent.objects.filter(action="record.view", patient_pk=elena.pk, outcome="ok").exists()


def test_no_known_allergies_is_not_the_same_as_no_information(nurse_client, samuel: Patient) -> None:  # type: ignore[no-untyped-def]
    text = nurse_client.get(f"/patients/{samuel.pk}/").content.decode()
    assert "data-nka" in text and "No known allergies" in text
    bare = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": "bare", "gender": "other"})
    snapshot_store(patient=bare, resources=[{"resourceType": "Patient", "id": "bare"}], source="bundle")
    text = nurse_client.get(f"/patients/{bare.pk}/").content.decode()
    assert "No allergy information recorded" in text and "data-nka" not in text


def test_a_patient_without_a_record_says_the_safety_context_is_unknown(nurse_client, db: None) -> None:  # type: ignore[no-untyped-def]
    patient = Patient.objects.create(fhir_id="empty")
    text = nurse_client.get(f"/patients/{patient.pk}/").content.decode()
    assert "Safety context unavailable" in text


def test_clinician_launched_for_a_sees_a_but_not_b(client, clinician, elena: Patient, samuel: Patient) -> None:  # type: ignore[no-untyped-def]
    client.force_login(clinician)
    session = client.session
    session["smart_patient_pk"] = elena.pk
    session.save()

    assert client.get(f"/patients/{elena.pk}/").status_code == 200
    response = client.get(f"/patients/{samuel.pk}/")
    assert response.status_code == 403
    assert "Okafor" not in response.content.decode()
    assert AuditEvent.objects.filter(action="access", outcome="denied", patient_pk=samuel.pk).exists()
    assert client.post(f"/patients/{samuel.pk}/refresh/").status_code == 403
    # A patient id that does not exist looks the same as one that is not theirs.
    assert client.get("/patients/999999/").status_code == 403


def test_clinician_without_a_launch_sees_no_patient(clinician_client, elena: Patient) -> None:  # type: ignore[no-untyped-def]
    assert clinician_client.get(f"/patients/{elena.pk}/").status_code == 403
    assert clinician_client.get("/patients/").status_code == 403


def test_patient_list_is_for_nurses_and_admins(nurse_client, elena: Patient, samuel: Patient) -> None:  # type: ignore[no-untyped-def]
    text = nurse_client.get("/patients/").content.decode()
    assert "Elena Rivera" in text and "Samuel Okafor" in text and "v1" in text
    filtered = nurse_client.get("/patients/", {"q": "okafor"}).content.decode()
    assert "Samuel Okafor" in filtered and "Elena Rivera" not in filtered
    assert AuditEvent.objects.filter(action="patient.list").count() == 2


def test_refresh_of_an_imported_record_is_recorded_as_failed(nurse_client, elena: Patient, django_capture_on_commit_callbacks, eager_celery) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        nurse_client.post(f"/patients/{elena.pk}/refresh/")
    assert len(callbacks) == 1  # the pull is queued only once the request's writes are committed
    response = nurse_client.get(f"/patients/{elena.pk}/")
    assert response.status_code == 200
    assert "The last refresh failed" in response.content.decode()
    assert "Penicillin" in response.content.decode()  # the stored copy stays on screen


def test_hostile_text_in_the_record_is_escaped(nurse_client, db: None) -> None:  # type: ignore[no-untyped-def]
    patient = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": "h1", "name": [{"text": "<script>x</script>"}]})
    snapshot_store(patient=patient, source="bundle", resources=[
        {"resourceType": "Patient", "id": "h1"},
        {"resourceType": "AllergyIntolerance", "id": "a", "clinicalStatus": {"coding": [{"code": "active"}]},
         "code": {"text": "<img src=x onerror=alert(1)>"}},
    ])
    text = nurse_client.get(f"/patients/{patient.pk}/").content.decode()
    assert "<img src=x" not in text and "&lt;img src=x" in text
    assert "<script>x</script>" not in text


def _safety_panel(html: str) -> str:
    start = html.index('id="safety-context"')
    return html[start:html.index("</section>", start)]


def test_encounter_diagnoses_are_in_the_safety_panel(nurse_client, db: None) -> None:  # type: ignore[no-untyped-def]
    resources = [e["resource"] for e in json.loads(ENCOUNTER_DIAGNOSES.read_text())["entry"]]
    patient = patient_upsert_from_resource(resource=resources[0])
    snapshot_store(patient=patient, resources=resources, source="bundle")
    panel = _safety_panel(nurse_client.get(f"/patients/{patient.pk}/").content.decode())
    assert "Atrial fibrillation" in panel and "Deep venous thrombosis" in panel  # encounter-diagnosis only
    assert panel.count("Atrial fibrillation") == 1  # recorded at two encounters, one line
    assert "At risk for falls" in panel and "Chronic kidney disease stage 1" in panel
    assert "apixaban 5 MG Oral Tablet" in panel and "Pneumonia" not in panel and "Pulmonary embolism" not in panel


def test_a_pending_pull_makes_the_page_poll_until_it_finishes_or_stalls(nurse_client, elena: Patient) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from django.utils import timezone

    from reconcile_app.fhir.models import RecordPull

    pull = RecordPull.objects.create(patient=elena)
    text = nurse_client.get(f"/patients/{elena.pk}/").content.decode()
    assert f'hx-get="/patients/{elena.pk}/live/?record=on"' in text and "data-pull-running" in text
    RecordPull.objects.filter(pk=pull.pk).update(started_at=timezone.now() - timedelta(hours=2))
    stalled = nurse_client.get(f"/patients/{elena.pk}/").content.decode()
    assert "never finished" in stalled and "data-live-poll" not in stalled


def test_a_first_launch_says_the_record_is_loading_not_unavailable(nurse_client, db: None) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.fhir.models import RecordPull

    patient = Patient.objects.create(fhir_id="first", display_name="First Launch")
    RecordPull.objects.create(patient=patient)
    panel = _safety_panel(nurse_client.get(f"/patients/{patient.pk}/").content.decode())
    assert "data-safety-loading" in panel and "Safety context unavailable" not in panel


def test_live_answers_nothing_while_pending_then_banner_panel_and_record_together(nurse_client, db: None) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    from reconcile_app.fhir.models import RecordPull

    resources = [e["resource"] for e in json.loads(ENCOUNTER_DIAGNOSES.read_text())["entry"]]
    patient = Patient.objects.create(fhir_id="ed-pat-1")  # known by id only, as before the first pull
    pull = RecordPull.objects.create(patient=patient)
    assert nurse_client.get(f"/patients/{patient.pk}/live/?record=on").status_code == 204

    patient = patient_upsert_from_resource(resource=resources[0])
    snapshot = snapshot_store(patient=patient, resources=resources, source="bundle")
    RecordPull.objects.filter(pk=pull.pk).update(status="ok", finished_at=timezone.now(), snapshot=snapshot)
    response = nurse_client.get(f"/patients/{patient.pk}/live/?record=on")
    text = response.content.decode()
    assert response.status_code == 200
    assert '<div id="patient-banner"' in text and "Rosa Marchetti" in text
    assert 'id="safety-context"' in text and "Atrial fibrillation" in _safety_panel(text)
    assert '<div id="record-body" hx-swap-oob="true">' in text and "Pulling the record" not in text
    assert text.count('hx-swap-oob="true"') == 3
    assert "data-live-poll" not in text  # the new panel stops the polling

    # A list page's poller asks for the banner and the panel only.
    text = nurse_client.get(f"/patients/{patient.pk}/live/").content.decode()
    assert 'id="record-body"' not in text and text.count('hx-swap-oob="true"') == 2
    assert AuditEvent.objects.filter(action="record.view", patient_pk=patient.pk, details__live=True).count() == 2


def test_live_is_behind_the_same_gate_as_the_record(client, clinician, elena: Patient, samuel: Patient) -> None:  # type: ignore[no-untyped-def]
    client.force_login(clinician)
    session = client.session
    session["smart_patient_pk"] = elena.pk
    session.save()
    assert client.get(f"/patients/{elena.pk}/live/").status_code == 200
    assert client.get(f"/patients/{samuel.pk}/live/").status_code == 403
