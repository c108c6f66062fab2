"""Dictionary hits that are not medicines in their sentence: a brand made of function words and a number, a word one
edit from a drug name with nothing about medicine around it, a pill container, a kitchen herb cooked or eaten.
Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput
from tests.narrative.conftest import rules_extractor

AT = datetime(2026, 6, 2, 11, 0, tzinfo=timezone(timedelta(hours=-6)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return rules_extractor()


def meds_in(extractor: RulesExtractor, text: str) -> list[MemoryDraft]:
    turns = (TurnInput("t1", "coach", AT, "What's new?"), TurnInput("t2", "patient", AT + timedelta(minutes=1), text))
    return [d for d in extractor.extract_session(SessionInput("s1", AT, turns)) if d.category == "medication"]


@pytest.mark.parametrize("text", [
    "Bus at 7, work at 8, home by 6 and asleep at 10 most nights.",
    "We went to a concert downtown on Friday.",
    "I finally bought one of those pill organizers with the days of the week.",
    "My daughter got me a pill box with an alarm.",
    "I sprinkle cinnamon on my oatmeal every morning.",
    "Tonight I'm roasting chicken with lots of garlic and ginger.",
])
def test_a_dictionary_hit_that_is_not_a_medicine_makes_no_medication(extractor, text: str) -> None:
    assert meds_in(extractor, text) == []


@pytest.mark.parametrize(("text", "drug"), [
    ("I take two garlic capsules a day for my heart.", "garlic"),
    ("The cinnamon pills from the drugstore, one with supper.", "cinnamon"),
    ("I've been taking metforman twice a day like she said.", "metformin"),
    ("Still on the Ritalin for focus.", "methylphenidate"),
])
def test_a_supplement_form_or_a_medicine_context_keeps_the_medication(extractor, text: str, drug: str) -> None:
    found = meds_in(extractor, text)
    assert found and found[0].attributes["drug"] == drug


@pytest.mark.parametrize("text", [
    "These days I'm on vacation mode, no alarms.",
    "I started taking the scenic road home after work.",
    "We're doing a spring recital at school.",
    "I drink peppermint in a big mug after dinner.",
])
def test_a_modifier_a_near_match_or_a_drink_is_not_a_medicine(extractor, text: str) -> None:
    assert meds_in(extractor, text) == []


def test_an_unknown_drug_started_is_still_kept(extractor) -> None:
    found = meds_in(extractor, "The clinic started me on zelmatrine injections this week.")
    assert found and found[0].attributes["drug"] == "zelmatrine" and found[0].attributes["action"] == "started"
