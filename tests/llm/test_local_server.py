"""The LLM and hybrid engines end to end against a real local OpenAI-compatible server (llama.cpp + Gemma 3 270M).

The model is tiny and its answers are nonsense: these tests check the wire path (transport, the
json_schema response format, token counts, timeouts) and what must hold whatever a model says (quotes
are the turn's own words, one finding per memory, citations exist and are not entered-in-error, the
safety floor), never the quality of an answer.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reconcile_app.core.exceptions import RetryableError
from reconcile_app.core.llm import ANSWERS, LlmClient
from reconcile_app.fhir.clinical import State
from reconcile_app.fhir.selectors import clinical_record_for
from reconcile_app.fhir.services import snapshot_import_bundle
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.services import extraction_run_execute, extraction_run_get_or_create
from reconcile_app.reconciliation.models import Finding, ReconciliationRun
from reconcile_app.reconciliation.services import reconciliation_run_execute, reconciliation_run_get_or_create
from reconcile_app.reconciliation.types import SEVERITY_RANK
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.services import upload_import, upload_receive

pytestmark = pytest.mark.llm

PROBE = {
    "type": "object",
    "properties": {
        "mood": {"type": "string", "enum": ["good", "bad"]},
        "note": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 12}},
    },
    "required": ["mood", "note", "tags"],
    "additionalProperties": False,
}


@pytest.fixture
def llm(settings, llm_base_url: str):  # type: ignore[no-untyped-def]
    """Settings that point every engine at the local server, sized for a tiny model on 2 cores."""
    settings.OPENAI_BASE_URL = llm_base_url
    settings.OPENAI_MODEL = os.environ.get("LLM_TEST_MODEL", "gemma3-270m")
    settings.OPENAI_TIMEOUT_SECONDS = 180
    settings.OPENAI_MAX_RETRIES = 0
    settings.LLM_OPERATIONS_PER_TURN = 1
    settings.LLM_MAX_OPERATIONS = 2
    settings.LLM_RECONCILE_BATCH = 2
    # A token is at least one character, and with these sizes the bounded schemas allow under 3,000
    # characters per answer: no answer can be cut mid-JSON, however the model rambles.
    settings.LLM_MAX_TOKENS = 3072
    settings.LLM_ANSWER_CACHE_SIZE = 64  # as in production: a request asked again word for word is not sent again
    ANSWERS.clear()
    return settings


def test_the_server_answers_in_the_requested_schema_with_token_counts(llm) -> None:  # type: ignore[no-untyped-def]
    result = LlmClient().complete_json(
        messages=[{"role": "user", "content": "Describe a sunny day as JSON."}], schema_name="probe", schema=PROBE, max_tokens=256,
    )
    assert result.data["mood"] in ("good", "bad") and len(result.data["note"]) <= 40
    assert result.prompt_tokens > 0 and result.completion_tokens > 0


def test_a_timeout_against_the_server_is_retryable(llm) -> None:  # type: ignore[no-untyped-def]
    client = LlmClient(timeout=0.01, max_retries=0)
    with pytest.raises(RetryableError, match="timed out"):
        client.complete_json(messages=[{"role": "user", "content": "Write a long story. " * 50}], schema_name="probe",
                             schema=PROBE, max_tokens=32)


def _one_session_of(folder: Path) -> tuple[str, dict]:
    """The shortest session with a safety-critical scenario: the safety floor has something to hold, and a
    tiny model on a shared CPU (about 20 tokens/s) gets through it in a couple of minutes."""
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    transcript = json.loads((folder / "transcript.json").read_text(encoding="utf-8"))
    safety = {s["session_id"] for s in labels["scenarios"] if s.get("safety_critical")}
    wanted = min((s for s in transcript["sessions"] if s["id"] in safety), key=lambda s: len(s["turns"]))["id"]
    transcript["sessions"] = [s for s in transcript["sessions"] if s["id"] == wanted]
    return wanted, transcript


@pytest.mark.django_db
def test_llm_and_hybrid_engines_end_to_end_over_a_dev_patient(llm, dev_set: Path) -> None:  # type: ignore[no-untyped-def]
    folder = dev_set / "p08"  # a short safety-critical session; the engines never see labels
    snapshot = snapshot_import_bundle(bundle=json.loads((folder / "bundle.json").read_text(encoding="utf-8")))
    session_id, transcript = _one_session_of(folder)
    upload = upload_receive(raw=json.dumps(transcript).encode(), filename="transcript.json", source=Upload.Source.REPLAY)
    assert upload_import(upload_id=upload.pk, start_pipeline=False).status == Upload.Status.IMPORTED
    session = Session.objects.get(patient=snapshot.patient, external_id=session_id)
    turns = {t.external_id: t for t in session.turns.all()}

    # The LLM extractor through the extraction service: whatever it proposes, what is stored is checked.
    run = extraction_run_execute(run_id=extraction_run_get_or_create(session=session, engine="llm").pk, engine="llm")
    assert run.status == "done"
    for m in Memory.objects.filter(run=run):
        turn = turns[m.turn.external_id]
        assert turn.speaker != "coach" and m.quote and turn.text[m.quote_start:m.quote_end] == m.quote
        assert m.engine == "llm" and m.attributes["llm"]["prompt_tokens"] > 0

    # Reconcile the rules engine's memories with rules, llm and hybrid, through the reconciliation service.
    rules_run = extraction_run_execute(run_id=extraction_run_get_or_create(session=session, engine="rules").pk, engine="rules")
    memories = Memory.objects.filter(run=rules_run).count()
    assert memories > 0
    findings, answers = {}, {}
    for engine in ("rules", "llm", "hybrid"):
        run = reconciliation_run_execute(
            run_id=reconciliation_run_get_or_create(session=session, snapshot=snapshot, engine=engine).pk, engine=engine
        )
        assert run.status == ReconciliationRun.Status.DONE
        findings[engine] = {f.memory_id: f for f in Finding.objects.filter(run=run)}
        assert len(findings[engine]) == memories  # one finding per memory, whatever the model said
        answers[engine] = len(ANSWERS)
    # The hybrid asks the model exactly what the LLM reconciler asked: answered from the cache, no new call.
    assert answers["llm"] > answers["rules"] and answers["hybrid"] == answers["llm"]

    assert any(f.kind in ("contradiction", "gap") for f in findings["rules"].values())  # the floor has work to do
    record = clinical_record_for(snapshot=snapshot)
    for engine in ("llm", "hybrid"):
        for f in findings[engine].values():
            assert f.engine == engine
            for c in f.citations:  # the citation gate: every cited resource exists and is not entered-in-error
                entry = record.get(c["resourceType"], c["id"])
                assert entry is not None and entry.state != State.ERROR
    for memory_id, rules in findings["rules"].items():
        hybrid = findings["hybrid"][memory_id]
        if rules.kind in ("contradiction", "gap"):  # the safety floor: the model never removes or lowers it
            assert hybrid.kind == rules.kind and hybrid.rule == rules.rule
            assert SEVERITY_RANK[hybrid.severity] >= SEVERITY_RANK[rules.severity]
            assert hybrid.safety_critical or not rules.safety_critical
        assert not any(n.startswith("llm unavailable") for n in hybrid.gate_notes)  # the server did answer
