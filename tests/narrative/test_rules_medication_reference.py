"""A medicine referred to without its name: an elided object in a dose change ("doing one instead of two"), numbers
said instead of others, and "it" in the answer to a coach's question that named the drug. Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput
from tests.narrative.conftest import rules_extractor

AT = datetime(2026, 7, 9, 18, 0, tzinfo=timezone(timedelta(hours=-7)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return rules_extractor()


def meds(extractor: RulesExtractor, *texts: str) -> list[MemoryDraft]:
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), text)
                  for i, text in enumerate(texts))
    return [d for d in extractor.extract_session(SessionInput("s1", AT, turns)) if d.category == "medication"]


@pytest.mark.parametrize(("answer", "change"), [
    ("money's tight so I'm taking one a day instead of two until Friday.", "less"),
    ("honestly just doing 2 instead of 3 to stretch the box", "less"),
    ("Yes. 7.5 instead of 15, since the holidays.", "less"),
    ("Now I'm on 3 instead of 2 because the shakes came back.", "more"),
])
def test_a_dose_change_without_the_drug_name_is_about_the_drug_just_named(extractor, answer: str, change: str) -> None:
    found = meds(extractor, "Which medicine was expensive?", "The propranolol, the heart one.", "How are you managing?", answer)
    changed = [m for m in found if m.attributes.get("action") == "changed_dose"]
    assert changed and all(m.attributes["drug"] == "propranolol" for m in changed)
    assert changed[-1].attributes.get("dose_change") == change


def test_a_count_with_no_comparison_is_not_a_dose_change(extractor) -> None:
    found = meds(extractor, "How's the bird watching?", "Saw two herons and one kingfisher instead of the usual ducks.")
    assert found == []


@pytest.mark.parametrize("answer", ["Splitting it in half these days.", "Halving it, to be honest."])
def test_it_in_the_answer_is_the_drug_the_coach_asked_about(extractor, answer: str) -> None:
    found = meds(extractor, "Anything new?", "I take my levothyroxine every morning.", "And how is the sertraline going?", answer)
    halved = [m for m in found if m.attributes.get("dose_change") == "half"]
    assert halved and halved[0].attributes["drug"] == "sertraline"


def test_it_a_few_turns_after_the_drug_was_named_is_still_that_drug(extractor) -> None:
    found = meds(extractor, "Did the pharmacist answer your question about the sertraline?", "Not yet, she was out.",
                 "Okay. What have you been doing in the meantime?", "Splitting it in half.")
    halved = [m for m in found if m.attributes.get("dose_change") == "half"]
    assert halved and halved[0].attributes["drug"] == "sertraline"


def test_it_with_no_drug_in_the_conversation_stays_unresolved(extractor) -> None:
    found = meds(extractor, "How was the trip?", "Long. The car broke down.", "Oh no. And then?", "Splitting it in half.")
    assert all(not m.attributes.get("drug") for m in found)
