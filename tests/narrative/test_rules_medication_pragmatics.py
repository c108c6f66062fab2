"""What a medicine mention does in the conversation: assent to a question about a talk or plan is not taking, a
medicine collected for someone else is theirs, an as-needed medicine not needed is control, not a stop; and a bare
number answers the coach's question still open a few turns back. Each with its near miss. Sentences written for
these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import Assertion, MemoryDraft, SessionInput, Subject
from tests.narrative.conftest import chat

AT = datetime(2026, 6, 9, 15, 0, tzinfo=timezone(timedelta(hours=-5)))


def session(*texts: str) -> SessionInput:
    return chat(AT, *texts)


def meds(drafts: list[MemoryDraft], subject: str = Subject.PATIENT) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == "medication" and d.subject == subject]


# --- a yes to a question about a talk or a plan -------------------------------------------------------------------

@pytest.mark.parametrize(("question", "answer"), [
    ("Did your endocrinologist talk about starting the glipizide?", "yeah he brought it up"),
    ("Did the nurse mention the atorvastatin at all?", "Yes she did."),
    ("Is the doctor thinking about adding glipizide?", "she is, we'll see next visit"),
])
def test_assent_to_a_question_about_a_talk_is_not_taking(extractor, question: str, answer: str) -> None:
    assert not meds(extractor.extract_session(session(question, answer)))


@pytest.mark.parametrize(("question", "answer", "action"), [
    ("Are you still taking the glipizide?", "yeah", "taking"),
    ("Did your endocrinologist talk about starting the glipizide?", "yes, he started me on it monday", "started"),
])
def test_a_yes_about_use_or_an_answer_with_its_own_action_is_still_read(extractor, question: str, answer: str,
                                                                          action: str) -> None:
    [found] = meds(extractor.extract_session(session(question, answer)))
    assert found.attributes["drug"] == "glipizide" and found.attributes["action"] == action


# --- an errand with someone else's medicines ----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Spent the morning picking up my father's stuff at the drugstore. The warfarin was back ordered.",
    "I grabbed my grandma's refills on the way, the furosemide was ready.",
    "Got the prescriptions for my husband. They were out of the carvedilol.",
])
def test_medicines_collected_for_someone_else_are_theirs(extractor, text: str) -> None:
    drafts = extractor.extract_session(session("What have you been up to?", text))
    assert not meds(drafts)
    assert meds(drafts, Subject.OTHER)


@pytest.mark.parametrize("text", [
    "Picked up my father's stuff at the drugstore. I take the same warfarin myself, and mine was ready too.",
    "I grabbed a few of my grandma's lorazepam to get some sleep.",
])
def test_the_patient_own_use_beside_an_errand_or_a_borrowed_pill_stays_the_patient(extractor, text: str) -> None:
    assert meds(extractor.extract_session(session("What have you been up to?", text)))


# --- an as-needed medicine not needed ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Haven't had to use the rescue inhaler in about three weeks.",
    "Didn't need my nitroglycerin once since the last visit.",
    "I barely touch the albuterol these days.",
])
def test_an_as_needed_medicine_not_needed_is_control_not_a_stop(extractor, text: str) -> None:
    [found] = meds(extractor.extract_session(session("How's your breathing and chest been?", text)))
    assert found.attributes["action"] == "taking" and found.assertion == Assertion.AFFIRMED
    assert found.attributes["as_needed_use"] == "not needed lately"


@pytest.mark.parametrize("text", [
    "I stopped using the rescue inhaler, it made my hands shake.",
    "Haven't taken the carvedilol in about three weeks.",
])
def test_a_stop_verb_or_a_scheduled_medicine_not_taken_is_still_a_stop(extractor, text: str) -> None:
    [found] = meds(extractor.extract_session(session("How's your breathing and chest been?", text)))
    assert found.attributes["action"] == "stopped"


# --- a bare number answers the question still open -----------------------------------------------------------------

def _weights(drafts: list[MemoryDraft]) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == "measurement" and d.attributes.get("kind") == "weight"]


def test_a_bare_number_answers_a_weight_question_across_a_holding_exchange(extractor) -> None:
    drafts = extractor.extract_session(session("What did the scale say this morning?", "one sec, it's in the hall",
                                               "No hurry.", "ok here", "Go ahead.", "203.6"))
    assert [d.attributes.get("value") for d in _weights(drafts)] == [203.6]


def test_a_later_question_about_minutes_closes_the_weight_question(extractor) -> None:
    drafts = extractor.extract_session(session("What did the scale say this morning?", "one sec, it's in the hall",
                                               "And how many minutes did you bike yesterday?", "ok here", "Go ahead.", "45"))
    assert not _weights(drafts)


# --- a vaccine named by its disease after the shot noun, and an offer accepted ----------------------------------------

def _shots(drafts: list[MemoryDraft]) -> list[MemoryDraft]:
    return [d for d in drafts if d.category == "immunization"]


@pytest.mark.parametrize(("text", "name"), [
    ("Stopped at the grocery pharmacy and got a jab against shingles while I waited.", "zoster vaccine"),
    ("I finally had that vaccine on friday, the pneumococcal, at the senior center.", "pneumococcal vaccine"),
])
def test_a_vaccine_named_after_the_shot_noun_is_an_immunization(extractor, text: str, name: str) -> None:
    drafts = extractor.extract_session(session("Anything new since we talked?", text))
    assert [d.name if hasattr(d, "name") else d.attributes["name"] for d in _shots(drafts)] == [name]
    assert not [d for d in drafts if d.category == "condition"]


def test_the_illness_itself_after_a_shot_noun_stays_an_illness(extractor) -> None:
    drafts = extractor.extract_session(session("Anything new since we talked?",
                                               "My grandson brought home rsv, the shot clinic was closed so I stayed away."))
    assert not [d for d in _shots(drafts) if d.subject == Subject.PATIENT and d.assertion == Assertion.AFFIRMED]


@pytest.mark.parametrize("text", [
    "The tech at the drugstore asked if I wanted the shingles shot, and I said sure.",
    "At the clinic the nurse asked me whether I would like a tdap booster. I told her yes, go ahead.",
])
def test_a_reported_offer_the_patient_accepted_was_given(extractor, text: str) -> None:
    shots = _shots(extractor.extract_session(session("Anything new since we talked?", text)))
    assert shots and all(s.assertion == Assertion.AFFIRMED and s.subject == Subject.PATIENT for s in shots)


@pytest.mark.parametrize("text", [
    "The tech at the drugstore asked if I wanted the shingles shot, I said maybe next month.",
    "If I want the shingles shot I can walk in any time.",
])
def test_an_offer_declined_or_a_plain_condition_stays_hypothetical(extractor, text: str) -> None:
    # the rules' memories, before the learned turn detector adds its own turn-level statement
    shots = _shots(extractor.analyse_session(session("Anything new since we talked?", text))[0])
    assert shots and all(s.assertion != Assertion.AFFIRMED for s in shots)


# --- a vaccine named by its disease with 'one' standing for a shot noun said before ------------------------------------

@pytest.mark.parametrize(("question", "answer", "name"), [
    ("Are your jabs up to date this season?", "Got the flu shot last week. The shingles one I keep putting off.",
     "zoster vaccine"),
    ("Which vaccines did the pharmacist suggest?", "pneumonia, and the covid one sometime in spring", "covid-19 vaccine"),
])
def test_a_disease_word_before_one_after_a_shot_noun_is_a_vaccine(extractor, question: str, answer: str,
                                                                    name: str) -> None:
    drafts = extractor.extract_session(session(question, answer))
    assert name in [d.attributes["name"] for d in _shots(drafts)]
    assert not [d for d in drafts if d.category == "condition" and d.attributes.get("name") in ("herpes zoster", "covid-19")]


def test_a_disease_word_before_one_after_a_test_noun_stays_an_illness(extractor) -> None:
    # trap twin: 'one' stands for the nearer test, so the disease word is the illness tested for, never a vaccine
    drafts = extractor.extract_session(session("Did you get your shots at the clinic?",
                                               "They swabbed me for two tests, and the covid one came back positive."))
    assert not [d for d in _shots(drafts) if d.attributes["name"] == "covid-19 vaccine"]


# --- a follow-on sentence about when "it" is taken belongs to the medicine named just before -------------------------

def _quotes(drafts: list[MemoryDraft], drug: str) -> list[str]:
    return [d.quote for d in meds(drafts) if drug in d.content.lower()]


def test_a_follow_on_schedule_sentence_joins_the_medicines_quote(extractor) -> None:
    drafts = extractor.extract_session(session("How are the pills going?",
                                               "I am still on the levothyroxine. I swallow it at bedtime now, easier on my stomach."))
    assert _quotes(drafts, "levothyroxine") and all("bedtime" in q for q in _quotes(drafts, "levothyroxine"))


@pytest.mark.parametrize("answer", [
    "I am still on the levothyroxine. My husband swallows his at bedtime now, easier on his stomach.",  # no pronoun for it
    "I am still on the levothyroxine and the metoprolol. I swallow it at bedtime now, easier on my stomach.",  # which one?
])
def test_a_schedule_sentence_without_a_clear_antecedent_stays_apart(extractor, answer: str) -> None:
    drafts = extractor.extract_session(session("How are the pills going?", answer))
    assert _quotes(drafts, "levothyroxine") and not any("bedtime" in q for q in _quotes(drafts, "levothyroxine"))


@pytest.mark.parametrize(("answer", "assertion"), [
    ("Got the flu shot last week. The shingles one I keep putting off.", Assertion.HYPOTHETICAL),
    ("Got the flu shot last week. The shingles one too, same pharmacy.", Assertion.AFFIRMED),  # twin: given, not put off
])
def test_a_vaccine_put_off_after_one_is_not_given(extractor, answer: str, assertion: str) -> None:
    drafts = extractor.extract_session(session("Are your jabs up to date this season?", answer))
    assert [d.assertion for d in _shots(drafts) if d.attributes["name"] == "zoster vaccine"] == [assertion]
