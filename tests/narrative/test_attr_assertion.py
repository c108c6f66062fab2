"""Assertion classes behind false findings: a negation that runs past a comma splice, a vomiting idiom read as a stop,
generic people and hearsay acted on, a first-person clause after a boundary (sentences written for these tests)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.assertion import default_context
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput
from tests.narrative.conftest import rules_extractor

AT = datetime(2026, 5, 11, 18, 0, tzinfo=timezone(timedelta(hours=-6)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return rules_extractor(assertion="context")


def run(extractor: RulesExtractor, text: str) -> list[MemoryDraft]:
    turns = (TurnInput("t1", "coach", AT, "What is new since we last talked?"), TurnInput("t2", "patient", AT, text))
    return extractor.extract_session(SessionInput("s1", AT, turns))


def verdict(sentence: str, target: str):
    start = sentence.index(target)
    return default_context().assert_targets(sentence, [(start, start + len(target))])[0]


@pytest.mark.parametrize("text", [
    "no bingeing this week, not my style anymore, my therapist checks every time",
    "Zero dizzy spells, not once, my counselor was happy to hear it.",
    "didn't skip a meal, my dietitian would be proud",
])
def test_a_negation_ends_at_a_comma_splice_with_its_own_subject(extractor, text) -> None:
    stops = [d for d in run(extractor, text) if d.attributes.get("action") == "stopped" and d.subject == "patient"]
    assert not stops


@pytest.mark.parametrize("sentence", ["No headaches at all, my pressure has been high though.",
                                      "never had that, my pressure has been high"])
def test_a_reading_after_the_splice_is_not_negated(sentence) -> None:
    assert not verdict(sentence, "pressure").negated


@pytest.mark.parametrize("text", [
    "Last winter I couldn't keep water down for two days with that stomach flu.",
    "the baby bug hit me, could not keep any food down sunday",
])
def test_could_not_keep_it_down_is_vomiting_not_a_stop(extractor, text) -> None:
    stops = [d for d in run(extractor, text) if d.attributes.get("action") == "stopped"]
    assert not stops


def test_the_negation_still_holds_without_the_idiom() -> None:
    assert verdict("I could not take the metformin on Sunday.", "metformin").negated


@pytest.mark.parametrize("sentence,target", [
    ("People online say magnesium helps cramps, so I tried it.", "magnesium"),
    ("Everyone at church says turmeric fixes joints so I started taking it.", "turmeric"),
    ("I read that people with arthritis can skip the methotrexate in summer, so we stopped it.", "methotrexate"),
])
def test_generic_claims_acted_on_are_the_patients(sentence, target) -> None:
    result = verdict(sentence, target)
    assert result.subject == "patient" and not result.hypothetical


@pytest.mark.parametrize("sentence,target", [
    ("People online say magnesium helps cramps.", "magnesium"),
    ("Everyone at church swears turmeric fixes joints, I'm not buying it.", "turmeric"),
    ("my cousin swears by ashwagandha for sleep", "ashwagandha"),
])
def test_generic_claims_and_hearsay_not_acted_on_are_not(sentence, target) -> None:
    result = verdict(sentence, target)
    assert result.subject != "patient" or result.hypothetical


@pytest.mark.parametrize("sentence,target", [
    ("My wife has a cold and I get nosebleeds.", "nosebleeds"),
    ("Hubby is on insulin, and I started metformin.", "metformin"),
])
def test_a_first_person_clause_after_a_boundary_is_the_patients(sentence, target) -> None:
    assert verdict(sentence, target).subject == "patient"


def test_another_persons_clause_before_the_boundary_stays_theirs() -> None:
    assert verdict("Hubby is on insulin, and I started metformin.", "insulin").subject == "other"


@pytest.mark.parametrize("sentence,target", [
    ("The doctors said it was a mild stroke and they put him on aspirin.", "mild stroke"),
    ("They think it's shingles and started her on valacyclovir.", "shingles"),
])
def test_a_finding_the_clinicians_put_on_someone_named_after_it_is_theirs(sentence, target) -> None:
    assert verdict(sentence, target).subject == "other"


@pytest.mark.parametrize("sentence,target", [
    ("They said it's a mild stroke and they put me on aspirin.", "mild stroke"),
    ("The doctor said it's shingles, so I'm on valacyclovir now.", "shingles"),
])
def test_with_the_patient_in_the_sentence_the_finding_stays_the_patients(sentence, target) -> None:
    assert verdict(sentence, target).subject == "patient"


@pytest.mark.parametrize("text", [
    "I saw on a forum there's a monthly shot now instead of the daily pill. Sunlenca, I think. Just curious.",
    "my aunt heard on the radio about a new weight loss pill. rybelsus maybe.",
])
def test_a_verbless_fragment_goes_on_with_the_hearsay_before_it(extractor, text) -> None:
    meds = [d for d in run(extractor, text) if d.category == "medication" and d.subject == "patient"]
    assert all(d.assertion != "affirmed" for d in meds)


def test_a_fragment_after_a_report_stays_a_report(extractor) -> None:
    drafts = run(extractor, "urgent care gave me an antibiotic for my ear. cipro i think. twice a day")
    assert [d for d in drafts if d.category == "medication" and d.assertion == "affirmed" and "cipro" in d.content.lower()]


def test_a_hedged_name_is_not_uncertain_about_the_taking() -> None:
    assert not verdict("I think I stopped the atorvastatin around Easter.", "atorvastatin").uncertain


@pytest.mark.parametrize("sentence,target", [
    ("Took my mother in, her sugar was 310 so they added insulin.", "insulin"),
    ("My son's asthma flared and the doctor increased his inhaler.", "inhaler"),
])
def test_clinicians_act_on_the_person_the_clause_is_about(sentence, target) -> None:
    assert verdict(sentence, target).subject == "other"


def test_clinicians_act_on_the_patient_after_the_patient(sentence="My wife drove me over and they added lisinopril for my pressure.") -> None:
    assert verdict(sentence, "lisinopril").subject == "patient"


def test_hearsay_from_a_medium_reaches_the_end_of_a_long_clause() -> None:
    sentence = "My aunt mailed me an article from a website that says thyroid trouble starts in the gut and you can fix it with a probiotic cleanse."
    assert verdict(sentence, "probiotic").hypothetical


@pytest.mark.parametrize("text,drug", [
    ("Marco started a statin last week and he won't stop talking about it.", "statin"),
    ("Denise quit her metformin in May, she says it upset her stomach.", "metformin"),
])
def test_a_sentence_initial_name_with_a_past_verb_and_a_later_pronoun_is_another_person(extractor, text, drug) -> None:
    meds = [d for d in run(extractor, text) if d.category == "medication"]
    assert meds and all(d.subject == "other" for d in meds)


def test_chat_dropping_i_before_a_past_verb_stays_the_patients(extractor) -> None:
    meds = [d for d in run(extractor, "Started the statin last week, no problems so far.") if d.category == "medication"]
    assert meds and all(d.subject == "patient" for d in meds)


@pytest.mark.parametrize("text", [
    "Oh, birth control. Thinking about asking my OB about the implant at the follow-up.",
    "the statin. might quit it if the aches keep up",
    "ozempic. gonna ask about it next appt",
])
def test_a_bare_topic_before_a_plan_is_the_plans_topic(extractor, text) -> None:
    # The rules' reading; a turn the learned detector also scores high gets its own "clinical statement" memory
    # for review (attributes["fallback"]), which says nothing about assertion and is judged by the reconciler.
    meds = [d for d in run(extractor, text) if d.category == "medication" and d.subject == "patient" and not d.attributes.get("fallback")]
    assert meds and all(d.assertion != "affirmed" for d in meds)


@pytest.mark.parametrize("text", [
    "Lisinopril. Stopped it on Friday because of the cough.",
    "Metformin twice a day now. Will ask the doc about the dose at my visit.",
])
def test_a_report_fragment_before_a_plan_stays_a_report(extractor, text) -> None:
    meds = [d for d in run(extractor, text) if d.category == "medication" and d.subject == "patient"]
    assert any(d.assertion == "affirmed" for d in meds)


def test_a_test_result_after_what_was_tested_negates_it() -> None:
    assert verdict("The strep test came back negative.", "strep").negated


def test_an_active_flare_is_not_negated() -> None:
    assert not verdict("My gout flared last week and my toe was huge.", "gout").negated


@pytest.mark.parametrize("sentence,target", [
    ("I was scared it was a stroke but urgent care said vertigo.", "stroke"),
    ("was worried that it might be shingles", "shingles"),
])
def test_a_feared_diagnosis_is_uncertain(sentence, target) -> None:
    assert verdict(sentence, target).uncertain


def test_the_diagnosis_it_turned_out_to_be_is_not_uncertain() -> None:
    assert not verdict("I was scared it was a stroke but urgent care said vertigo.", "vertigo").uncertain
