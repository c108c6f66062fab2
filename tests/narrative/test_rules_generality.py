"""Failure classes found on held-out conversations, each pinned with sentences written for these tests (no database)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput

AT = datetime(2026, 3, 9, 10, 0, tzinfo=timezone(timedelta(hours=-7)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return RulesExtractor()


def run(extractor: RulesExtractor, *texts: str) -> list[MemoryDraft]:
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), t)
                  for i, t in enumerate(texts))
    return extractor.extract_session(SessionInput("s1", AT, turns))


def patient_affirmed(drafts: list[MemoryDraft], category: str) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == category and d.subject == "patient" and d.assertion == "affirmed"]


def test_a_clause_final_though_does_not_end_another_persons_scope(extractor) -> None:
    drafts = run(extractor, "Hi", "My brother's sugar was sky high though, 320 this morning.")
    glucose = [d for d in drafts if d.category == "measurement"]
    assert glucose and all(d.subject == "other" for d in glucose)


def test_a_mid_sentence_though_still_ends_the_scope(extractor) -> None:
    drafts = run(extractor, "Hi", "My wife has been sick, though my own pressure was 150 over 95 today.")
    assert patient_affirmed(drafts, "measurement")


def test_quit_going_to_a_program_is_stopping_it_not_a_plan(extractor) -> None:
    drafts = run(extractor, "Hi", "I quit going to physical therapy after two sessions.")
    care = patient_affirmed(drafts, "care_activity")
    assert care and care[0].attributes["action"] == "stopped"


def test_a_future_clause_after_a_diagnosis_keeps_the_diagnosis_affirmed(extractor) -> None:
    drafts = run(extractor, "Hi", "The nurse phoned and said I have pernicious anemia, and I'm starting shots next week.")
    assert patient_affirmed(drafts, "condition")


def test_a_backward_future_still_covers_its_own_clause(extractor) -> None:
    drafts = run(extractor, "Hi", "I'm getting my knee replaced next week.")
    assert not patient_affirmed(drafts, "procedure")


def test_a_sentence_initial_name_with_a_past_verb_is_the_experiencer(extractor) -> None:
    drafts = run(extractor, "Hi", "Lucas had a bad asthma flare at school and the nurse gave him his albuterol.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("condition", "medication")]


def test_dropping_i_at_the_start_is_still_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "Finally had my colonoscopy, he said it was clean.")
    assert patient_affirmed(drafts, "procedure")


def test_someone_else_using_a_named_persons_inhaler_is_not_the_patient(extractor) -> None:
    drafts = run(extractor, "Hi", "Oh we were so worried, Nico had a bad asthma night and Maria had to use his inhaler.")
    assert not [d for d in drafts if d.subject == "patient" and d.category in ("condition", "medication")]


def test_an_answer_to_a_question_about_him_or_her_is_about_them(extractor) -> None:
    drafts = run(extractor, "Is she doing okay?", "Bypass. Home already, back to work in a month.")
    assert not [d for d in drafts if d.subject == "patient" and d.category == "procedure"]


def test_a_question_about_him_does_not_capture_the_patients_own_statement(extractor) -> None:
    drafts = run(extractor, "Is he doing okay?", "Yeah. But I had chest pain myself last night.")
    assert patient_affirmed(drafts, "symptom")


def test_a_skin_eruption_after_an_unnamed_antibiotic_is_a_suspected_allergy(extractor) -> None:
    drafts = run(extractor, "Hi", "Urgent care put me on an antibiotic for my sinuses, one twice a day.",
                 "How is it going with it?", "Awful. Friday I broke out in itchy bumps on my neck and my eyelids swelled.")
    allergy = patient_affirmed(drafts, "allergy")
    assert allergy and allergy[0].attributes["substance"] == "antibiotic"


def test_the_pills_plural_is_not_the_contraceptive_pill(extractor) -> None:
    drafts = run(extractor, "Hi", "My stomach hurt so I stopped the pills.")
    meds = [d for d in drafts if d.category == "medication"]
    assert meds and all(d.attributes.get("drug_class") != "hormonal contraceptive" for d in meds)
