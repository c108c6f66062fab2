"""Whose action a stop word is: a negated evaluation is not a stop, a stop whose object is another noun (another drug,
'no more' with a non-medicine noun) is not the mention's, a demonstrative before a named drug is its determiner.
Each with a twin that must still read as a stop. Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.types import MemoryDraft, SessionInput, Subject
from tests.narrative.conftest import chat

AT = datetime(2026, 6, 9, 15, 0, tzinfo=timezone(timedelta(hours=-5)))


def session(*texts: str) -> SessionInput:
    return chat(AT, *texts)


def actions(extractor, *texts: str) -> dict[str, str]:
    drafts: list[MemoryDraft] = extractor.extract_session(session(*texts))
    return {(d.attributes.get("drug") or d.attributes.get("drug_class") or d.attributes.get("reference", "")): d.attributes["action"]
            for d in drafts if d.category == "medication" and d.subject == Subject.PATIENT}


# --- a copula negated before an evaluative adjective --------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "My readings aren't so good on the prednisone weeks.",
    "Mornings were not great after the metformin, a bit queasy.",
    "The numbers are not ideal when I take the prednisone late.",
])
def test_a_negated_evaluation_is_not_a_stop(extractor, text: str) -> None:
    found = actions(extractor, "How are things going?", text)
    assert found and all(a != "stopped" for a in found.values())


@pytest.mark.parametrize("text", [
    "I'm not on the prednisone anymore.",
    "Honestly I am not taking the metformin these days.",
])
def test_a_negated_intake_is_still_a_stop(extractor, text: str) -> None:
    assert "stopped" in actions(extractor, "How are things going?", text).values()


# --- a stop whose object is another drug -------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Back in 2021, from the citalopram to the bupropion, they had me stop the citalopram first.",
    "The psychiatrist made me quit the citalopram and move over to the bupropion.",
])
def test_a_stop_whose_object_is_another_drug_is_not_this_ones(extractor, text: str) -> None:
    found = actions(extractor, "How did the change go?", text)
    assert found.get("citalopram") == "stopped"
    assert found.get("bupropion") != "stopped"


@pytest.mark.parametrize("text", [
    "I stopped the citalopram and the bupropion.",
    "I quit taking my citalopram and bupropion last month.",
    "I stopped the citalopram, and the bupropion too.",
])
def test_coordinated_drugs_share_the_stop(extractor, text: str) -> None:
    found = actions(extractor, "How did the change go?", text)
    assert found.get("citalopram") == "stopped" and found.get("bupropion") == "stopped"


# --- 'no more' with a noun phrase of its own ---------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Back down to one carvedilol at night, and no more dizzy spells at the sink.",
    "I take the tamsulosin at bedtime now, no more trips to the bathroom every hour.",
])
def test_no_more_with_another_noun_does_not_stop_the_drug(extractor, text: str) -> None:
    found = actions(extractor, "Anything new this week?", text)
    assert found and all(a != "stopped" for a in found.values())


@pytest.mark.parametrize("text", [
    "No more carvedilol for me, the cardiologist agreed.",
    "The tamsulosin made me dizzy so no more of that.",
    "The carvedilol, no more.",
])
def test_no_more_with_the_drug_or_a_pronoun_is_still_a_stop(extractor, text: str) -> None:
    assert "stopped" in actions(extractor, "Anything new this week?", text).values()


# --- a demonstrative that opens a named drug's phrase ------------------------------------------------------------

def test_a_demonstrative_before_a_named_drug_is_its_determiner(extractor) -> None:
    found = actions(extractor, "How are your mornings?",
                    "Levothyroxine at six with water. I dropped those fish oil capsules, the burps were awful.")
    assert found.get("fish oil") == "stopped"
    assert set(found) <= {"levothyroxine", "fish oil"}
    assert found.get("levothyroxine") != "stopped"


def test_a_demonstrative_on_its_own_still_stands_for_the_medicine(extractor) -> None:
    drafts = extractor.extract_session(session("How is the new pill?", "I was on lisinopril every morning.",
                                               "And now?", "Well I stopped those on Friday, the cough was bad."))
    assert any(d.attributes.get("drug") == "lisinopril" and d.attributes["action"] == "stopped" and "t4" in d.turn_ids
               for d in drafts if d.category == "medication")


# --- a pronoun takes the nearest drug named before it in the turn ------------------------------------------------

def test_a_pronoun_takes_the_nearest_drug_before_it_in_the_turn(extractor) -> None:
    found = actions(extractor, "How are your mornings?",
                    "Metoprolol with breakfast every day. The fish oil tasted awful, so I quit them on Sunday.")
    assert found.get("metoprolol") != "stopped"
    assert found.get("fish oil") == "stopped"


def test_a_pronoun_after_a_single_drug_still_takes_it(extractor) -> None:
    found = actions(extractor, "How are your mornings?", "The metoprolol made me so tired that I quit it on Sunday.")
    assert found.get("metoprolol") == "stopped"
