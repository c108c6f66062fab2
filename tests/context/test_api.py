"""GET /api/patients/<id>/context: an enrolled platform's token, scoped to its patients, versioned, audited."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.fhir.services import snapshot_import_bundle
from reconcile_app.narrative.models import Memory
from reconcile_app.transcripts.models import CoachingPlatform, Session
from reconcile_app.transcripts.services import platform_create, platform_enrol, platform_revoke, session_withdraw
from reconcile_app.triage.models import TriageNote
from tests.triage.factories import item_create, memory_create, patient_create, session_create

FHIR = Path(__file__).resolve().parent.parent / "data" / "fhir"


@pytest.fixture(autouse=True)
def _eager_tasks_and_fresh_cache():  # type: ignore[no-untyped-def]
    from config.celery_app import app

    cache.clear()
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


def _platform(name: str, *patients: Any) -> tuple[CoachingPlatform, str]:
    platform, token = platform_create(name=name)
    for patient in patients:
        platform_enrol(platform=platform, patient=patient)
    return platform, token


def _get(client, token: str, fhir_id: str, **params: Any):  # type: ignore[no-untyped-def]
    headers = {k: v for k, v in params.items() if k.startswith("HTTP_")}
    query = {k: v for k, v in params.items() if not k.startswith("HTTP_")}
    return client.get(f"/api/patients/{fhir_id}/context", query, HTTP_AUTHORIZATION=f"Bearer {token}", **headers)


def _platform_session(patient, platform, **kwargs):  # type: ignore[no-untyped-def]
    """A session filed by the platform (its own namespace of session ids)."""
    session = session_create(patient=patient, platform=platform, **kwargs)
    Session.objects.filter(pk=session.pk).update(namespace=f"platform:{platform.pk}")
    session.refresh_from_db()
    return session


def _said(pack: dict) -> str:
    return json.dumps(pack["memories"]) + json.dumps(pack["about_others"]) + json.dumps(pack["open_discrepancies"])


def test_the_url_is_the_documented_one() -> None:
    assert reverse("api:patient_context", args=["pt-1"]) == "/api/patients/pt-1/context"


def test_an_enrolled_platform_gets_every_active_safety_item_of_a_synthea_size_record(client, db):  # type: ignore[no-untyped-def]
    bundle = json.loads((FHIR / "large_patient.json").read_text())
    snapshot = snapshot_import_bundle(bundle=bundle)
    _, token = _platform("WellCoach", snapshot.patient)
    response = _get(client, token, snapshot.patient.fhir_id)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    pack = response.json()
    assert pack["schema"] == "reconcile.context-pack/1" and pack["record"]["snapshot_version"] == snapshot.version
    record = build_clinical_record(snapshot.resources)
    served = {ref for section in ("allergies", "medications", "conditions") for line in pack["safety"][section] for ref in line["references"]}
    active = {f"{e.resource_type}/{e.id}" for e in record.active_allergies + record.active_medications + record.active_conditions}
    assert served == active and len(active) >= 25
    assert all(line["snapshot_at"] == snapshot.fetched_at.isoformat() for line in pack["safety"]["medications"])
    assert any(line["source"]["table"] == "interactions" for line in pack["do_not_suggest"])
    assert response["ETag"] == f'"{pack["version"]}"' and response["Cache-Control"] == "private, no-cache"


def test_without_a_valid_token_the_answer_is_401_and_audited(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    assert client.get(f"/api/patients/{patient.fhir_id}/context").status_code == 401
    assert _get(client, "rct_wrong", patient.fhir_id).status_code == 401
    platform_revoke(platform_id=platform.pk)
    assert _get(client, token, patient.fhir_id).status_code == 401
    assert AuditEvent.objects.get(action="api.context", outcome="denied").count == 3


def test_another_patient_is_the_same_404_as_no_patient_and_the_refusal_is_audited(client, db):  # type: ignore[no-untyped-def]
    mine, theirs = patient_create(), patient_create()
    platform, token = _platform("WellCoach", mine)
    _platform("OtherCoach", theirs)
    a, b, c = _get(client, token, theirs.fhir_id), _get(client, token, "pt-nobody"), _get(client, token, "bad id!")
    assert a.status_code == b.status_code == c.status_code == 404
    assert a.json() == b.json() == c.json() == {"error": "not found"}
    denials = AuditEvent.objects.filter(action="api.context", outcome="denied", object_id=str(platform.pk))
    assert denials.count() == 3 and all(d.patient_pk is None for d in denials)


def test_nothing_from_another_patient_or_another_platform(client, db):  # type: ignore[no-untyped-def]
    patient, other_patient = patient_create(), patient_create()
    platform, token = _platform("WellCoach", patient, other_patient)
    rival, _ = _platform("RivalCoach", patient)
    memory_create(session=_platform_session(patient, platform), content="Medication lisinopril: stopped",
                  attributes={"drug": "lisinopril", "action": "stopped"})
    memory_create(session=session_create(patient=patient), content="Medication amlodipine: taking",  # the care team's upload
                  attributes={"drug": "amlodipine", "action": "taking"}, chain_key="medication:amlodipine")
    memory_create(session=_platform_session(patient, rival), content="Medication naproxen: started",
                  attributes={"drug": "naproxen", "action": "started"}, chain_key="medication:naproxen")
    memory_create(session=_platform_session(other_patient, platform), content="Medication digoxin: started",
                  attributes={"drug": "digoxin", "action": "started"}, chain_key="medication:digoxin")
    item_create(patient=patient, session=_platform_session(patient, rival))  # quoted only in the rival's session
    pack = _get(client, token, patient.fhir_id).json()
    said = _said(pack)
    assert "lisinopril" in said and "amlodipine" in said
    assert "naproxen" not in said and "digoxin" not in said
    assert pack["open_discrepancies"] == []
    assert pack["patient"] == {"reference": patient.reference}


def test_nothing_revoked_outdated_or_withdrawn(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    kept = _platform_session(patient, platform)
    memory_create(session=kept, content="Medication lisinopril: stopped", attributes={"drug": "lisinopril", "action": "stopped"})
    memory_create(session=kept, content="Medication metoprolol: stopped", attributes={"drug": "metoprolol", "action": "stopped"},
                  chain_key="medication:metoprolol", status=Memory.Status.REVOKED)
    memory_create(session=kept, content="Medication atenolol: taking", attributes={"drug": "atenolol", "action": "taking"},
                  chain_key="medication:atenolol", status=Memory.Status.OUTDATED)
    withdrawn = _platform_session(patient, platform)
    memory_create(session=withdrawn, content="Medication warfarin: skipped", attributes={"drug": "warfarin", "action": "skipped"},
                  chain_key="medication:warfarin")
    item_create(patient=patient, session=withdrawn, memory=memory_create(
        session=withdrawn, content="Medication sertraline: stopped", attributes={"drug": "sertraline", "action": "stopped"},
        chain_key="medication:sertraline"))
    assert "warfarin" in _said(_get(client, token, patient.fhir_id).json())
    session_withdraw(session_id=withdrawn.pk, user=None)
    said = _said(_get(client, token, patient.fhir_id).json())
    assert "lisinopril" in said
    for gone in ("metoprolol", "atenolol", "warfarin", "sertraline"):
        assert gone not in said, gone


def test_only_the_latest_finished_extraction_run_of_a_session_speaks_for_it(client, db):  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from django.utils import timezone

    from reconcile_app.narrative.models import ExtractionRun

    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    memory_create(session=session, content="Medication lisinopril: stopped", attributes={"drug": "lisinopril", "action": "stopped"})
    ExtractionRun.objects.filter(session=session).update(finished_at=timezone.now() - timedelta(days=1))
    newer = ExtractionRun.objects.create(session=session, engine="rules", engine_version="2", input_sha256=session.content_sha256,
                                         status=ExtractionRun.Status.DONE, finished_at=timezone.now())
    turn = session.turns.get(seq=2)
    Memory.objects.create(patient=patient, session=session, run=newer, turn=turn, turn_ids=[turn.external_id], category="medication",
                          content="Medication lisinopril: taking", attributes={"drug": "lisinopril", "action": "taking"}, quote="q",
                          quote_start=0, quote_end=1, speaker="patient", mention_time=turn.at, engine="rules", engine_version="2",
                          content_sha256="f" * 64)
    statements = [m["statement"] for m in _get(client, token, patient.fhir_id).json()["memories"]["medication"]]
    assert statements == ["taking lisinopril"]  # the older run's "stopped" is not said twice, nor contradicted


def test_a_corrected_statement_leaves_the_pack_while_under_review_and_its_accepted_correction_joins_it(client, db, nurse,
                                                                                                      admin_user):  # type: ignore[no-untyped-def]
    from reconcile_app.narrative.services import memory_correction_accept, memory_correction_propose

    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    original = memory_create(session=session, content="Medication lisinopril: taking 10 mg", quote="I take 10 mg of lisinopril",
                             attributes={"drug": "lisinopril", "action": "taking", "dose_text": "10 mg"})
    correction = memory_correction_propose(memory=original, content="I take 20 mg of lisinopril every morning", actor=nurse)

    def quotes() -> list[str]:
        return [m["quote"] for m in _get(client, token, patient.fhir_id).json()["memories"].get("medication", [])]

    assert quotes() == []  # disputed: neither the original nor the unreviewed correction is told as what the patient said
    memory_correction_accept(correction=correction, actor=admin_user)
    assert quotes() == [Memory.objects.get(pk=correction.pk).quote] and "20 mg" in quotes()[0]


def test_another_persons_fact_is_labelled_and_never_the_patients(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    memory_create(session=session, category="condition", content="[mother] Condition diabetes mellitus", subject="other",
                  subject_relation="mother", attributes={"name": "diabetes mellitus"}, chain_key="")
    memory_create(session=session, content="Medication metformin: taking", subject="other", subject_relation="mother",
                  attributes={"drug": "metformin", "action": "taking"}, chain_key="")
    pack = _get(client, token, patient.fhir_id).json()
    assert "diabetes" not in json.dumps(pack["memories"]) and "metformin" not in json.dumps(pack["memories"])
    assert {(m["about"], m["category"]) for m in pack["about_others"]} == {("mother", "condition"), ("mother", "medication")}


def test_open_discrepancies_in_plain_words_without_notes_or_staff_names(client, db, nurse):  # type: ignore[no-untyped-def]
    from reconcile_app.triage.models import TriageItem

    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    item = item_create(patient=patient, session=session, memory=memory_create(
        session=session, attributes={"drug": "lisinopril", "action": "stopped"}))
    TriageItem.objects.filter(pk=item.pk).update(status="in_review", assignee=nurse, dismiss_text="Nina thinks it is a mix-up")
    TriageNote.objects.create(item=item, author=nurse, text="Called Dr. Rivera's office, waiting on a callback")
    (discrepancy,) = _get(client, token, patient.fhir_id).json()["open_discrepancies"]
    assert discrepancy["text"].startswith("Patient said: stopped lisinopril") and discrepancy["text"].endswith("A nurse is reviewing it.")
    assert "Record: " in discrepancy["text"] and discrepancy["kind"] == "contradiction" and discrepancy["safety_critical"]
    body = json.dumps(discrepancy)
    for secret in ("Nina", "nina", "Rivera", "mix-up", "callback"):
        assert secret not in body
    TriageItem.objects.filter(pk=item.pk).update(status="dismissed")
    assert _get(client, token, patient.fhir_id).json()["open_discrepancies"] == []


def test_an_unchanged_pack_is_304_and_a_change_is_a_new_version(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    memory_create(session=session, attributes={"drug": "lisinopril", "action": "stopped"})
    first = _get(client, token, patient.fhir_id)
    etag = first["ETag"]
    again = _get(client, token, patient.fhir_id, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert again["Cache-Control"] == "private, no-cache"
    assert _get(client, token, patient.fhir_id, HTTP_IF_NONE_MATCH=f'W/{etag}, "other"').status_code == 304
    memory_create(session=session, content="Medication ibuprofen: started", attributes={"drug": "ibuprofen", "action": "started"},
                  chain_key="medication:ibuprofen")
    changed = _get(client, token, patient.fhir_id, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag and "ibuprofen" in _said(changed.json())


def test_every_serve_is_audited_with_platform_patient_and_version(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    first = _get(client, token, patient.fhir_id)
    _get(client, token, patient.fhir_id, HTTP_IF_NONE_MATCH=first["ETag"])
    _get(client, token, patient.fhir_id, format="text", budget=3000)
    rows = list(AuditEvent.objects.filter(action="api.context", outcome="ok").order_by("id"))
    assert len(rows) == 3
    version = first.json()["version"]
    for row in rows:
        assert row.patient_pk == patient.pk and row.object_type == "platform" and row.object_id == str(platform.pk)
        assert row.details["platform"] == platform.pk and row.details["version"] == version
    assert [(r.details["format"], r.details["status"]) for r in rows] == [("json", 200), ("json", 304), ("text", 200)]


def test_the_text_rendering_is_sized_for_a_prompt_and_ordered_safety_first(client, db):  # type: ignore[no-untyped-def]
    from reconcile_app.context.text import estimate_tokens

    patient = patient_create()
    platform, token = _platform("WellCoach", patient)
    session = _platform_session(patient, platform)
    for n in range(60):
        memory_create(session=session, content=f"Medication drug{n}: taking", attributes={"drug": f"drug{n}", "action": "taking"},
                      chain_key=f"medication:drug{n}")
    response = _get(client, token, patient.fhir_id, format="text", budget=700)
    assert response.status_code == 200 and response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    assert estimate_tokens(text) <= 700
    assert text.index("Allergies (active)") < text.index("Medications (active)") < text.index("Conditions (active")
    assert "Penicillin" in text and "Lisinopril 10 mg tablet" in text and "Type 2 diabetes mellitus" in text
    assert "Left out to fit 700 tokens" in text
    assert response["ETag"].endswith('-text-700"')
    assert _get(client, token, patient.fhir_id, format="text", budget=700, HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


def test_bad_parameters_get_a_clear_error(client, db):  # type: ignore[no-untyped-def]
    patient = patient_create()
    _, token = _platform("WellCoach", patient)
    assert _get(client, token, patient.fhir_id, format="xml").status_code == 400
    assert _get(client, token, patient.fhir_id, budget=500).json()["fields"] == {"budget": ["budget applies to format=text only"]}
    assert _get(client, token, patient.fhir_id, format="text", budget="lots").status_code == 400
    small = _get(client, token, patient.fhir_id, format="text", budget=20)
    assert small.status_code == 422 and small.json()["needed"] > 20
    assert AuditEvent.objects.get(action="api.context", outcome="error").details["reason"] == "budget_too_small"
