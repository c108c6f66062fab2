"""The learned turn detector: scores on memories, a fallback memory where the rules were silent, none where unsure."""
from __future__ import annotations

from datetime import datetime, timezone

from reconcile_app.core.linear import LinearModel, TextField
from reconcile_app.narrative.engines.delta import DeltaDetector, TurnHit, turn_dense
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput

AT = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def _models() -> tuple[LinearModel, LinearModel]:
    field = TextField("t", {"quit": 1.0, "weather": 1.0}, ngram_max=1)
    detector = LinearModel("d", "1", ["no", "yes"], {"yes": {"t:quit": 6.0, "t:weather": -6.0}}, {"yes": -2.0}, [field], threshold=0.8)
    category = LinearModel("c", "1", ["allergy", "medication", "symptom"], {"medication": {"t:quit": 2.0}},
                           {"allergy": 0.0, "medication": 0.0, "symptom": 0.0}, [field])
    return detector, category


def _session(*texts: str) -> SessionInput:
    turns = [TurnInput("s1-t1", "coach", AT, "How was the week?")]
    turns += [TurnInput(f"s1-t{i + 2}", "patient", AT, text) for i, text in enumerate(texts)]
    return SessionInput("s1", AT, tuple(turns))


def _memory(turn_id: str, category: str = "lifestyle") -> MemoryDraft:
    return MemoryDraft(category=category, content="x", anchor_turn_id=turn_id, turn_ids=(turn_id,), quote="x", quote_start=0,
                       quote_end=1, speaker="patient", mention_time=AT)


def test_a_sure_turn_without_a_clinical_memory_gets_a_fallback_of_the_predicted_category() -> None:
    detector, category = _models()
    session = _session("finally quit those tablets", "lovely weather here")
    drafts = DeltaDetector.from_models(detector, category).annotate(session, [_memory("s1-t3")], {})
    fallback = [d for d in drafts if d.attributes.get("fallback")]
    assert len(fallback) == 1
    assert fallback[0].anchor_turn_id == "s1-t2" and fallback[0].category == "medication"
    assert fallback[0].attributes["delta"]["score"] > 0.9
    assert drafts[-1].anchor_turn_id == "s1-t3" and drafts[-1].attributes["delta"]["score"] < 0.1


def test_a_turn_the_rules_already_read_clinically_gets_no_fallback() -> None:
    detector, category = _models()
    session = _session("finally quit those tablets")
    drafts = DeltaDetector.from_models(detector, category).annotate(session, [_memory("s1-t2", "medication")], {})
    assert [d.category for d in drafts] == ["medication"]
    assert drafts[0].attributes["delta"]["why"][0] == "t:quit"


def test_without_a_model_the_rules_memories_pass_unchanged() -> None:
    memory = _memory("s1-t2")
    assert DeltaDetector.from_models(None, None).annotate(_session("quit"), [memory], {}) == [memory]
    assert "delta" not in memory.attributes


def test_dense_features_name_hits_record_states_and_readings() -> None:
    dense = turn_dense("bp was 150/95", "Any readings?", [TurnHit("drug", "active")], [TurnHit("symptom")], [])
    assert dense == {"hit:drug": 1.0, "rec:drug:active": 1.0, "coach_hit:symptom": 1.0, "reading": 1.0, "coach_asked": 1.0}
