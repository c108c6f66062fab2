"""Issue 12 on transcripts: invalid Unicode refused with a precise error everywhere (UI, API, CLI),
limits per upload, repeated statements collapsed, every upload in a terminal status, chunked bodies
read whole, and coaching platforms bound to the patients they are enrolled for."""
from __future__ import annotations

import io
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import WSGIRequest
from django.core.management import CommandError, call_command
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.services import patient_upsert_from_resource
from reconcile_app.narrative.models import Memory
from reconcile_app.pipeline import pipeline_patient_drain
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts import services
from reconcile_app.transcripts.access import PatientNotFound, patient_get_for_platform
from reconcile_app.transcripts.api_views import transcript_create
from reconcile_app.transcripts.models import Session, Turn, Upload
from reconcile_app.transcripts.parsers import ParsedTurn, turns_collapse
from reconcile_app.transcripts.services import (
    platform_create,
    platform_enrol,
    session_withdraw,
    upload_import,
    upload_receive,
    uploads_fail_stuck,
)
from .conftest import transcript_bytes

pytestmark = pytest.mark.django_db

API = "/api/transcripts"


def _doc(*, patient: str = "Patient/pt-test-1", speaker: str = "patient", text: str = "I walked.", turns: int = 2) -> dict:
    day = "2026-01-06"
    return {"format": "coaching-transcript/v1", "patient": patient, "sessions": [{
        "id": "s01", "started_at": f"{day}T18:00:00-05:00",
        "turns": [{"id": f"s01-t{i:02d}", "speaker": speaker if i % 2 == 0 else "coach", "at": f"{day}T18:00:00-05:00",
                   "text": text if i % 2 == 0 else "How was the week?"} for i in range(1, turns + 1)],
    }]}


def _json_bytes(doc: dict) -> bytes:
    # ensure_ascii keeps a lone surrogate as the \\udXXX escape a real exporter would write.
    return json.dumps(doc, ensure_ascii=True).encode()


def _token(name: str, patient) -> str:  # type: ignore[no-untyped-def]
    cache.clear()
    platform, token = platform_create(name=name)
    platform_enrol(platform=platform, patient=patient)
    return token


def _post(client, token: str, body: bytes):  # type: ignore[no-untyped-def]
    return client.post(API, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


# --- invalid Unicode ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["speaker", "patient", "text"])
def test_a_lone_surrogate_is_refused_with_its_place_through_the_api(client, patient, field):
    token = _token("WellCoach", patient)
    doc = _doc(**{field: {"speaker": "daugh\ud800ter", "patient": "Patient/pt-\udfff", "text": "I walked \ud83d."}[field]})
    response = _post(client, token, _json_bytes(doc))
    assert response.status_code == 422
    errors = response.json()["errors"]
    where = {"speaker": "sessions[0].turns[1].speaker", "patient": "patient", "text": "sessions[0].turns[1].text"}[field]
    assert len(errors) == 1 and errors[0].startswith(f"{where}: invalid Unicode at character") and "lone surrogate U+D" in errors[0]
    upload = Upload.objects.get()
    assert upload.status == Upload.Status.INVALID and bytes(upload.raw) == _json_bytes(doc)


def test_a_lone_surrogate_is_refused_on_the_upload_page(admin_client, patient):
    file = SimpleUploadedFile("week.json", _json_bytes(_doc(speaker="\udc80")), content_type="application/json")
    response = admin_client.post(reverse("transcripts:upload_create"), {"file": file}, follow=True)
    assert response.status_code == 200
    upload = Upload.objects.get()
    assert upload.status == Upload.Status.INVALID and "lone surrogate U+DC80" in upload.errors[0]
    assert "lone surrogate U+DC80" in response.content.decode()


def test_a_lone_surrogate_is_a_clear_error_on_the_command_line(patient, tmp_path):
    path = tmp_path / "export.json"
    path.write_bytes(_json_bytes(_doc(patient="Patient/\ud800")))
    err = StringIO()
    with pytest.raises(CommandError, match="stored but not imported"):
        call_command("import_transcript", str(path), stdout=StringIO(), stderr=err)
    assert "patient: invalid Unicode at character 9 (lone surrogate U+D800)" in err.getvalue()
    with pytest.raises(CommandError, match="--patient: invalid Unicode"):
        call_command("import_transcript", str(path), "--patient", "Patient/\udcff", stdout=StringIO())


def test_a_file_name_that_is_not_utf8_is_stored_readably(patient):
    """A CLI path whose bytes are not UTF-8 reaches Python as lone surrogates (surrogateescape):
    the upload is stored under a readable name instead of failing in the database."""
    upload = upload_receive(raw=transcript_bytes(), filename="/tmp/week-\udce9.json", source=Upload.Source.CLI)
    assert Upload.objects.get(pk=upload.pk).filename == "/tmp/week-\ufffd.json"


# --- limits and collapsing -----------------------------------------------------------------------


def test_a_session_over_the_turn_limit_is_refused_with_the_numbers(client, patient, settings):
    settings.TRANSCRIPT_MAX_TURNS = 100
    token = _token("WellCoach", patient)
    response = _post(client, token, _json_bytes(_doc(turns=101)))
    assert response.status_code == 422
    assert response.json()["errors"] == ["session s01: 101 turns; the limit is 100 per session"]


def test_an_upload_over_the_session_limit_is_refused(client, patient, settings):
    settings.TRANSCRIPT_MAX_SESSIONS = 3
    token = _token("WellCoach", patient)
    response = _post(client, token, transcript_bytes(sessions=4))
    assert response.status_code == 422
    assert response.json()["errors"] == ["the file has 4 sessions; the limit is 3 per upload (split the export)"]


def test_one_sentence_repeated_a_thousand_times_is_extracted_once(patient, fake_engines):
    """The probe's flood: one session of a repeated exchange. Stored once with its count; the raw
    upload keeps every repeat; the pipeline writes one memory and one finding, not hundreds."""
    raw = _json_bytes(_doc(text="I skipped my blood pressure pill again this week.", turns=1000))
    upload = upload_import(upload_id=upload_receive(raw=raw, filename="t.json", source=Upload.Source.CLI).pk, start_pipeline=False)
    assert upload.status == Upload.Status.IMPORTED and upload.summary["collapsed_turns"] == 997
    turns = list(Turn.objects.order_by("seq").values_list("speaker", "repeats"))
    # The coach's short question once without and once after the patient's sentence; the sentence once.
    assert turns == [("coach", 1), ("patient", 500), ("coach", 499)]
    pipeline_patient_drain(patient_id=patient.pk)
    assert Memory.objects.count() == 1 and Finding.objects.count() == 1
    assert bytes(Upload.objects.get().raw) == raw


def test_short_answers_to_different_questions_are_kept_apart():
    from datetime import datetime, timezone as tz

    at = datetime(2026, 1, 6, 18, tzinfo=tz.utc)

    def turn(i: int, speaker: str, text: str) -> ParsedTurn:
        return ParsedTurn(id=f"t{i}", speaker=speaker, speaker_label="", at=at, text=text)

    turns = (turn(1, "coach", "Did you take the metformin?"), turn(2, "patient", "Yes."),
             turn(3, "coach", "Did you stop the aspirin?"), turn(4, "patient", "Yes."),
             turn(5, "coach", "Did you take the metformin?"), turn(6, "patient", "Yes."),
             turn(7, "patient", "My ankles are swollen again every evening now."),
             turn(8, "patient", "my ankles are  swollen again every evening now."))
    kept = [(t.id, n) for t, n in turns_collapse(turns)]
    # "Yes." after the aspirin question stays; the repeated metformin exchange and sentence fold.
    assert kept == [("t1", 2), ("t2", 2), ("t3", 1), ("t4", 1), ("t7", 2)]


# --- every upload reaches a terminal status -----------------------------------------------------


def test_an_internal_error_during_import_fails_the_upload_with_the_reason(client, patient, monkeypatch):
    token = _token("WellCoach", patient)

    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "_sessions_store", broken)
    response = _post(client, token, transcript_bytes())
    assert response.status_code == 500 and response.json()["status"] == "failed"
    upload = Upload.objects.get()
    assert upload.status == Upload.Status.FAILED and upload.rejection.startswith("internal error (RuntimeError)")
    assert bytes(upload.raw) == transcript_bytes() and not Session.objects.exists()
    assert "disk on fire" not in upload.rejection  # the class, never the message


def test_the_sweep_fails_uploads_left_received(patient):
    stuck = upload_receive(raw=transcript_bytes(), filename="a.json", source=Upload.Source.UI)
    fresh = upload_receive(raw=transcript_bytes(), filename="b.json", source=Upload.Source.UI)
    Upload.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(minutes=30))
    assert uploads_fail_stuck() == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == Upload.Status.FAILED and "did not finish" in stuck.rejection
    assert fresh.status == Upload.Status.RECEIVED
    assert AuditEvent.objects.filter(action="transcript.import", outcome="error", object_id=str(stuck.pk)).exists()


def test_the_upload_sweep_runs_on_the_beat_schedule(settings):
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "reconcile_app.transcripts.tasks.uploads_fail_stuck_task" in tasks


# --- chunked bodies -------------------------------------------------------------------------------


def test_a_chunked_api_body_is_read_whole(patient, django_capture_on_commit_callbacks):
    """A chunked request has no Content-Length; the server (gunicorn) de-chunks wsgi.input."""
    token = _token("WellCoach", patient)
    raw = transcript_bytes(sessions=3)
    environ = RequestFactory()._base_environ(PATH_INFO=API, REQUEST_METHOD="POST", CONTENT_TYPE="application/json",
                                             HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_TRANSFER_ENCODING="chunked")
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = io.BytesIO(raw)
    with django_capture_on_commit_callbacks():
        response = transcript_create(WSGIRequest(environ))
    assert response.status_code == 202, response.content
    upload = Upload.objects.get()
    assert bytes(upload.raw) == raw and upload.size == len(raw) and upload.summary["added"] == ["s01", "s02", "s03"]


def test_a_chunked_body_over_the_limit_is_recorded_not_kept(patient, settings):
    settings.TRANSCRIPT_MAX_BYTES = 100
    token = _token("WellCoach", patient)
    environ = RequestFactory()._base_environ(PATH_INFO=API, REQUEST_METHOD="POST", CONTENT_TYPE="application/json",
                                             HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_TRANSFER_ENCODING="chunked")
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = io.BytesIO(transcript_bytes())
    assert transcript_create(WSGIRequest(environ)).status_code == 413
    assert bytes(Upload.objects.get().raw) == b""


# --- platforms bound to their patients -------------------------------------------------------------


def test_a_platform_cannot_file_for_a_patient_it_is_not_enrolled_for_and_learns_nothing(client, patient):
    cache.clear()
    _, token = platform_create(name="Stranger")
    existing = _post(client, token, transcript_bytes(patient="Patient/pt-test-1"))
    missing = _post(client, token, transcript_bytes(patient="Patient/pt-nobody"))
    assert existing.status_code == missing.status_code == 422
    a, b = existing.json(), missing.json()
    assert set(a) == set(b) and a["rejection"] == b["rejection"] == "no enrolled patient matches"
    assert a["errors"] == ["patient: no patient enrolled for this platform matches 'Patient/pt-test-1'"]
    assert b["errors"] == ["patient: no patient enrolled for this platform matches 'Patient/pt-nobody'"]
    assert not Session.objects.exists() and Upload.objects.count() == 2  # both kept, neither held


def test_a_platform_file_must_name_its_patient(client, patient):
    token = _token("WellCoach", patient)
    response = _post(client, token, transcript_bytes(patient=""))
    assert response.status_code == 422 and "must name the patient" in response.json()["errors"][0]


def test_an_organisation_enrolment_covers_its_patients(client, db):
    cache.clear()
    member = patient_upsert_from_resource(resource={"resourceType": "Patient", "id": "pt-org-1",
                                                    "identifier": [{"system": "https://clinic-7.example/mrn", "value": "M-1"}]})
    patient_upsert_from_resource(resource={"resourceType": "Patient", "id": "pt-org-2",
                                           "identifier": [{"system": "https://other.example/mrn", "value": "M-2"}]})
    platform, token = platform_create(name="ClinicCoach")
    platform_enrol(platform=platform, organization_system="https://clinic-7.example/mrn")
    assert patient_get_for_platform(platform=platform, patient_ref="https://clinic-7.example/mrn|M-1") == member
    with pytest.raises(PatientNotFound):
        patient_get_for_platform(platform=platform, patient_ref="Patient/pt-org-2")
    with pytest.raises(PatientNotFound):
        patient_get_for_platform(platform=platform, patient_ref="Patient/pt-none")
    assert _post(client, token, transcript_bytes(patient="Patient/pt-org-1")).status_code == 202


def test_another_platforms_session_ids_are_neither_revealed_nor_clobbered(client, patient, django_capture_on_commit_callbacks):
    first, second = _token("FirstCoach", patient), _token("SecondCoach", patient)
    with django_capture_on_commit_callbacks():
        assert _post(client, first, transcript_bytes(sessions=2)).status_code == 202
        same = _post(client, second, transcript_bytes(sessions=2)).json()
        other = _post(client, second, transcript_bytes(sessions=2, texts={"s01": "different words"})).json()
    # To the second platform the ids are its own: new, then its own conflict; never "unchanged" or
    # a conflict with what the first platform sent.
    assert same["summary"]["added"] == ["s01", "s02"] and same["summary"]["unchanged"] == []
    assert [c["session"] for c in other["summary"]["conflicts"]] == ["s01"]
    assert Session.objects.filter(patient=patient).count() == 4
    assert len(set(Session.objects.values_list("namespace", flat=True))) == 2


def test_an_unknown_upload_and_another_platforms_look_the_same(client, patient, django_capture_on_commit_callbacks):
    first, second = _token("FirstCoach", patient), _token("SecondCoach", patient)
    with django_capture_on_commit_callbacks():
        location = _post(client, first, transcript_bytes())["Location"]
    theirs = client.get(location, HTTP_AUTHORIZATION=f"Bearer {second}")
    nothing = client.get(f"{API}/999999", HTTP_AUTHORIZATION=f"Bearer {second}")
    assert theirs.status_code == nothing.status_code == 404 and theirs.json() == nothing.json()


# --- audit counts are exact --------------------------------------------------------------------------


def test_withdrawal_audits_the_number_of_memories_not_the_cascaded_rows(patient, fake_engines, admin_user):
    upload = upload_import(upload_id=upload_receive(raw=transcript_bytes(sessions=1, texts={"s01": "I skipped my pill"}),
                                                    filename="t.json", source=Upload.Source.CLI).pk, start_pipeline=False)
    pipeline_patient_drain(patient_id=patient.pk)
    memories = Memory.objects.count()
    assert memories == 1 and Finding.objects.count() == 1  # so a cascading delete would count more rows
    session_withdraw(session_id=Session.objects.get(upload=upload).pk, user=admin_user)
    event = AuditEvent.objects.get(action="transcript.withdraw", object_type="session")
    assert event.details["memories_removed"] == memories


def test_enrol_platform_command_binds_a_platform_to_a_patient(client, patient):
    cache.clear()
    _, token = platform_create(name="CliCoach")
    assert _post(client, token, transcript_bytes()).status_code == 422
    out = StringIO()
    call_command("enrol_platform", "CliCoach", "--patient", "Patient/pt-test-1", stdout=out)
    assert "may file transcripts for Patient/pt-test-1" in out.getvalue()
    assert _post(client, token, transcript_bytes()).status_code == 202
    with pytest.raises(CommandError, match="no single patient"):
        call_command("enrol_platform", "CliCoach", "--patient", "Patient/nobody", stdout=StringIO())


def test_the_upload_page_says_when_an_import_failed(admin_client, patient, monkeypatch):
    def broken(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "_sessions_store", broken)
    file = SimpleUploadedFile("week.json", transcript_bytes(), content_type="application/json")
    page = admin_client.post(reverse("transcripts:upload_create"), {"file": file}, follow=True)
    assert page.status_code == 200 and "Stored, but the import failed: internal error (RuntimeError)" in page.content.decode()
