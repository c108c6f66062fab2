"""A stop verb under negation or prohibition is a medicine continued; a stop said with an idiom of dismissal or a
break is a stop. Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import Assertion, MemoryDraft, SessionInput
from tests.narrative.conftest import chat

AT = datetime(2026, 5, 4, 16, 0, tzinfo=timezone(timedelta(hours=-4)))


def session(*texts: str) -> SessionInput:
    return chat(AT, *texts)


def meds(drafts: list[MemoryDraft]) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == "medication"]


@pytest.mark.parametrize("text", [
    "My son made me promise never to stop the losartan.",
    "The pharmacist said do not quit the losartan whatever you read online.",
    "I didn't stop the losartan, I just moved it to lunch.",
    "Haven't missed one losartan since the new pill box.",
    "Nope, I won't be dropping the losartan, my pressure is too good.",
])
def test_a_negated_or_forbidden_stop_is_a_medicine_continued(extractor, text: str) -> None:
    found = meds(extractor.extract_session(session("How are the medicines going?", text)))
    assert found and found[0].attributes["drug"] == "losartan"
    assert found[0].attributes["action"] != "stopped" and found[0].assertion == Assertion.AFFIRMED


@pytest.mark.parametrize("text", [
    "I stopped the losartan, it made me cough.",
    "I don't take the losartan anymore.",
    "Not on losartan since the spring.",
])
def test_a_plain_stop_or_a_denied_intake_is_still_a_stop(extractor, text: str) -> None:
    found = meds(extractor.extract_session(session("How are the medicines going?", text)))
    assert found and found[0].attributes["action"] == "stopped"


@pytest.mark.parametrize("text", [
    "Full disclosure, I gave the losartan a pink slip last month.",
    "The losartan and I broke up in April.",
    "I have given the losartan a little vacation while we travel.",
    "Honestly I fired the losartan, my feet swelled.",
    "We gave him the weekend off the losartan to see what happens.",
    "I said goodbye to the losartan at Easter.",
    "The losartan and I went our separate ways around Thanksgiving.",
    "Parted ways with the losartan after the dizzy spells.",
    "I put the losartan aside while my ankles were swollen.",
])
def test_a_stop_said_with_an_idiom_is_a_stop(extractor, text: str) -> None:
    found = meds(extractor.extract_session(session("How are the medicines going?", text)))
    assert found and found[0].attributes["drug"] == "losartan" and found[0].attributes["action"] == "stopped"


@pytest.mark.parametrize("text", [
    "I took the day off work and took my losartan like always.",
    "We broke up the drive with a picnic; losartan with lunch as usual.",
    "I set some money aside for the losartan copay and keep taking it.",
    "We separate the losartan from the vitamins in the pill box.",
])
def test_a_day_off_or_a_trip_is_not_a_stop(extractor, text: str) -> None:
    found = meds(extractor.extract_session(session("How are the medicines going?", text)))
    assert found and found[0].attributes["action"] != "stopped"


def test_a_lay_name_for_a_rate_control_pill_is_a_beta_blocker(extractor) -> None:
    found = meds(extractor.extract_session(session("How are the medicines going?", "I fired the heart-rate pill last week.")))
    assert found and found[0].attributes["drug_class"] == "beta blocker" and found[0].attributes["action"] == "stopped"
