"""Chat rules of the ConText component: plans carried out, media words, the care team's 'they said', measurements taken
on the patient and a clinician's 'she said', on sentences written for the test (with near-miss negatives)."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.assertion import Assertion, default_context


@pytest.fixture(scope="module")
def ctx():
    return default_context()


def verdict(ctx, sentence: str, target: str, **kwargs) -> Assertion:
    start = sentence.lower().index(target.lower())
    return ctx.assert_targets(sentence, [(start, start + len(target))], **kwargs)[0]


@pytest.mark.parametrize("sentence,target", [
    ("My neighbor kept saying I should get the shingles vaccine, so I got it on Monday.", "shingles vaccine"),
    ("The pharmacist said I ought to try melatonin so I've been taking two at night.", "melatonin"),
    ("A coworker swears by magnesium for cramps, so I bought some.", "magnesium"),
    ("My therapist wants me to start the nicotine patch, and I did.", "nicotine patch"),
])
def test_a_plan_or_claim_carried_out_later_in_the_sentence_is_the_patients_fact(ctx, sentence: str, target: str) -> None:
    result = verdict(ctx, sentence, target)
    assert result.is_patient_affirmed
    assert any(c.startswith("CARRIED_OUT") for c in result.cues)


@pytest.mark.parametrize("sentence,target", [
    ("The nurse said I should try the nicotine patch so I didn't.", "nicotine patch"),
    ("If I take naproxen my stomach burns, so I started using acetaminophen.", "naproxen"),
    ("I might ask about the shingles vaccine and I got a flu shot today.", "shingles vaccine"),
])
def test_near_misses_stay_plans(ctx, sentence: str, target: str) -> None:
    assert verdict(ctx, sentence, target).hypothetical


@pytest.mark.parametrize("sentence,target", [
    ("Saw a post about berberine replacing metformin.", "berberine"),
    ("They were talking on the news about ozempic shortages.", "ozempic"),
    ("Watched a video claiming apple cider vinegar melts fat.", "apple cider vinegar"),
])
def test_a_medium_named_by_a_common_noun_is_hearsay_where_something_is_seen_on_it(ctx, sentence: str, target: str) -> None:
    assert verdict(ctx, sentence, target).hypothetical


@pytest.mark.parametrize("sentence,target", [
    ("The dentist put a post in for the crown on Thursday.", "crown"),
    ("Ordered my vitamin d online since the pharmacy was out.", "vitamin d"),
    ("Started the cardiac rehab program last week.", "cardiac rehab"),
])
def test_the_same_nouns_elsewhere_are_no_medium(ctx, sentence: str, target: str) -> None:
    assert not verdict(ctx, sentence, target).hypothetical


def test_the_care_teams_past_they_said_is_a_report_not_hearsay(ctx) -> None:
    result = verdict(ctx, "Went to urgent care and they said it was bronchitis.", "bronchitis")
    assert result.is_patient_affirmed


@pytest.mark.parametrize("sentence,target", [
    ("They say turmeric fixes joint pain.", "turmeric"),
    ("Somebody said cinnamon lowers sugar.", "cinnamon"),
])
def test_an_unnamed_crowd_is_still_hearsay(ctx, sentence: str, target: str) -> None:
    assert verdict(ctx, sentence, target).hypothetical


@pytest.mark.parametrize("sentence,target", [
    ("My husband took my blood pressure and it was high.", "blood pressure"),
    ("My daughter checked my sugar after dinner.", "sugar"),
])
def test_a_measurement_someone_takes_on_the_patient_is_the_patients(ctx, sentence: str, target: str) -> None:
    assert verdict(ctx, sentence, target).subject == "patient"


def test_taking_the_patients_supply_still_makes_the_taker_the_experiencer(ctx) -> None:
    assert verdict(ctx, "My nephew took my tramadol last weekend.", "tramadol").subject == "other"


@pytest.mark.parametrize("sentence,target", [
    ("The cardiologist looked at the echo and he said there's no heart failure.", "heart failure"),
    ("My endocrinologist reviewed the labs and she thinks it's not thyroid disease.", "thyroid disease"),
])
def test_a_clinicians_pronoun_is_a_speaker_not_an_experiencer(ctx, sentence: str, target: str) -> None:
    result = verdict(ctx, sentence, target)
    assert result.subject == "patient" and result.negated


def test_a_pronoun_after_a_relative_stays_the_relative(ctx) -> None:
    assert verdict(ctx, "Told the doctor about my sister, she has lupus.", "lupus").subject == "other"


@pytest.mark.parametrize("sentence,target,relation", [
    ("My significant other finally started losartan.", "losartan", "spouse"),
    ("Our better half situation: my other half has gout again.", "gout", "spouse"),
])
def test_idioms_for_a_partner_are_another_person(ctx, sentence: str, target: str, relation: str) -> None:
    result = verdict(ctx, sentence, target)
    assert (result.subject, result.relation) == ("other", relation)


def test_a_named_beneficiary_after_the_target_is_theirs(ctx) -> None:
    sentence = "Picked up the amoxicillin for Maya yesterday."
    start = sentence.index("Maya")
    assert verdict(ctx, sentence, "amoxicillin", names=[(start, start + 4)]).subject == "other"


@pytest.mark.parametrize("sentence,target", [
    ("The pharmacist takes rosuvastatin herself, she told me.", "rosuvastatin"),
    ("My nurse is on levothyroxine too.", "levothyroxine"),
])
def test_a_clinicians_own_health_is_another_persons(ctx, sentence: str, target: str) -> None:
    assert verdict(ctx, sentence, target).subject == "other"


def test_a_clinician_acting_on_the_patient_is_no_experiencer(ctx) -> None:
    assert verdict(ctx, "The cardiologist took me off clopidogrel.", "clopidogrel").subject == "patient"


def test_a_clinician_follows_the_callers_default(ctx) -> None:
    # the coach asked about the husband: "the doctor added X" is about him
    result = verdict(ctx, "The doctor added spironolactone.", "spironolactone", default_subject="other",
                     default_relation="husband")
    assert (result.subject, result.relation) == ("other", "husband")


@pytest.mark.parametrize("sentence", [
    'My uncle told me "I quit the lisinopril months ago".',
    "My cousin texted \u201cI've been on lisinopril since June\u201d.",
])
def test_first_person_in_another_persons_quoted_words_is_them(ctx, sentence: str) -> None:
    assert verdict(ctx, sentence, "lisinopril").subject == "other"


def test_first_person_after_the_quote_closes_is_the_patient(ctx) -> None:
    sentence = 'My uncle said "it works for me" and I started lisinopril too.'
    assert verdict(ctx, sentence, "lisinopril").subject == "patient"


@pytest.mark.parametrize("sentence,target,subject", [
    ("My aunt's pressure was way up tho, 170 at the pharmacy.", "170", "other"),
    ("My aunt was sick, though my own pressure was fine.", "pressure", "patient"),
])
def test_a_clause_final_though_is_an_adverb(ctx, sentence: str, target: str, subject: str) -> None:
    assert verdict(ctx, sentence, target).subject == subject
