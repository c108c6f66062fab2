"""Pure pieces of the evaluation runner: the isolated (Dimension 2) transcript and its wording."""
from __future__ import annotations

import json

from reconcile_app.evaluation.results import results_problems
from reconcile_app.evaluation.runner import first_person, isolated_transcript
from reconcile_app.transcripts.parsers import parse_json

TRANSCRIPT = {
    "format": "coaching-transcript/v1",
    "patient": "Patient/pt-1",
    "sessions": [
        {"id": "s01", "started_at": "2026-01-05T18:00:00-05:00", "turns": [
            {"id": "s01-t01", "speaker": "coach", "at": "2026-01-05T18:00:00-05:00", "text": "Hi"}]},
        {"id": "s02", "started_at": "2026-01-12T18:00:00-05:00", "turns": [
            {"id": "s02-t01", "speaker": "coach", "at": "2026-01-12T18:00:00-05:00", "text": "Hi"},
            {"id": "s02-t02", "speaker": "patient", "at": "2026-01-12T18:01:30-05:00", "text": "I stopped it."},
            {"id": "s02-t03", "speaker": "patient", "at": "2026-01-12T18:02:00-05:00", "text": "The cough."}]},
    ],
}
LABELS = {"scenarios": [{"id": "sc1", "session_id": "s02", "turn_ids": ["s02-t02", "s02-t03"],
                         "summary": "Stopped her lisinopril because she had a dry cough"}]}


def test_the_patient_is_put_in_the_first_person_and_nothing_else_changes():
    assert first_person("Stopped her lisinopril; She says his dose, him, HERSELF.") == "Stopped my lisinopril; I says my dose, me, myself."
    assert first_person("Her husband Gene's insulin") == "my husband Gene's insulin"
    assert first_person("the heron and the shelf") == "the heron and the shelf"


def test_the_isolated_transcript_holds_only_scenario_sessions_on_their_first_turn_and_time():
    parsed = parse_json(isolated_transcript(transcript=TRANSCRIPT, labels=LABELS).decode())
    assert parsed.patient == "Patient/pt-1"
    [session] = parsed.sessions
    assert session.id == "s02" and session.started_at.isoformat() == "2026-01-12T18:00:00-05:00"
    [turn] = session.turns
    assert (turn.id, turn.speaker, turn.at.isoformat()) == ("s02-t02", "patient", "2026-01-12T18:01:30-05:00")
    assert turn.text == "Stopped my lisinopril because I had a dry cough"


def test_results_problems_names_what_breaks_the_format():
    good = {"patient": "Patient/p", "memories": [{"id": "m1", "session_id": "s1", "turn_ids": ["t"], "subject": "patient",
                                                   "category": "medication", "content": "x"}],
            "findings": [{"id": "f1", "memory_id": "m1", "session_id": "s1", "turn_ids": ["t"], "kind": "gap", "severity": "low",
                          "safety_critical": False, "fhir_refs": [{"resourceType": "Condition", "id": "c1", "system": "", "code": ""}],
                          "explanation": "e"}]}
    assert results_problems(good) == []
    bad = json.loads(json.dumps(good))
    bad["findings"][0].update(kind="maybe", memory_id="m9", safety_critical="no")
    assert results_problems(bad) == [
        "finding f1: safety_critical must be bool", "finding f1: memory m9 is not listed", "finding f1: kind 'maybe'"]


def test_replay_keeps_every_task_in_process_on_the_memory_transport(monkeypatch):
    from config.celery_app import app
    from reconcile_app.evaluation.scratch import celery_in_process

    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:1/0")  # a broker that is down
    before = (app.conf.task_always_eager, app.connection_for_write().as_uri())
    with celery_in_process():
        assert app.conf.task_always_eager is True
        assert app.connection_for_write().as_uri().startswith("memory://")
    assert (app.conf.task_always_eager, app.connection_for_write().as_uri()) == before
