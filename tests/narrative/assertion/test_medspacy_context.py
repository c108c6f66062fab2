"""medspaCy ConText with chat rules: negation, plans, hearsay, history and whose fact it is, on sentences written for the test."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.assertion import Assertion, SpeakerFrame, default_context


@pytest.fixture(scope="module")
def ctx():
    return default_context()


def verdict(ctx, sentence: str, target: str, **kwargs) -> Assertion:
    start = sentence.lower().index(target.lower())
    return ctx.assert_targets(sentence, [(start, start + len(target))], **kwargs)[0]


def test_a_plain_report_is_the_patients_affirmed_fact(ctx) -> None:
    assert verdict(ctx, "Picked up my pravastatin refill this morning.", "pravastatin").is_patient_affirmed


@pytest.mark.parametrize("sentence", [
    "I haven't had a migraine in weeks.",
    "havent had a migraine in weeks",
    "No migraine since the weekend.",
    "Never got a migraine on the new schedule.",
])
def test_negation_reads_chat_contractions(ctx, sentence: str) -> None:
    result = verdict(ctx, sentence, "migraine")
    assert result.negated and result.subject == "patient"


def test_a_change_of_state_is_not_an_absence(ctx) -> None:
    assert not verdict(ctx, "The rash is no longer there.", "rash").negated


def test_negation_stops_at_a_contrast(ctx) -> None:
    assert not verdict(ctx, "No swelling in my feet but the gout flared again.", "gout").negated


@pytest.mark.parametrize("sentence,target", [
    ("If the cough keeps up I might try the inhaler again.", "inhaler"),
    ("gonna start the vitamin d next month", "vitamin d"),
    ("My cardiologist wants me to begin eplerenone.", "eplerenone"),
    ("Thinking about asking for a sleep study someday.", "sleep study"),
    ("ill ask about the shingles vaccine", "shingles vaccine"),
])
def test_plans_and_conditionals_are_hypothetical(ctx, sentence: str, target: str) -> None:
    result = verdict(ctx, sentence, target)
    assert result.hypothetical and not result.is_patient_affirmed


def test_hearsay_from_media_is_not_a_use(ctx) -> None:
    result = verdict(ctx, "Watched a youtube clip claiming turmeric cures arthritis.", "turmeric")
    assert result.hypothetical
    assert any(c.startswith("HEARSAY") for c in result.cues)


def test_used_to_is_historical(ctx) -> None:
    assert verdict(ctx, "I used to chew tobacco in the army.", "tobacco").historical


def test_a_relatives_condition_is_theirs(ctx) -> None:
    result = verdict(ctx, "My nephew was diagnosed with epilepsy in May.", "epilepsy")
    assert (result.subject, result.relation) == ("other", "nephew")


def test_the_patients_own_i_ends_another_persons_scope(ctx) -> None:
    sentence = "My aunt has lupus and I started hydroxychloroquine too."
    assert verdict(ctx, sentence, "lupus").subject == "other"
    assert verdict(ctx, sentence, "hydroxychloroquine").is_patient_affirmed


def test_so_as_an_adverb_does_not_end_another_persons_scope(ctx) -> None:
    assert verdict(ctx, "He was so dizzy after the new pills.", "dizzy").subject == "other"


def test_so_ends_a_negation(ctx) -> None:
    assert not verdict(ctx, "No cramps today so the magnesium helps.", "magnesium").negated


def test_a_pronoun_carries_the_other_person(ctx) -> None:
    assert verdict(ctx, "She is on prednisone for her knees.", "prednisone").subject == "other"


def test_a_beneficiary_after_the_drug_makes_it_theirs(ctx) -> None:
    result = verdict(ctx, "I grabbed the amoxicillin for my grandson.", "amoxicillin")
    assert (result.subject, result.relation) == ("other", "grandson")


def test_a_borrowed_supply_is_the_patients_use_with_an_owner(ctx) -> None:
    result = verdict(ctx, "I took two of my roommate's tramadol for my back.", "tramadol")
    assert (result.subject, result.owner) == ("patient", "roommate")


def test_my_before_the_drug_is_a_possessive_when_someone_else_acts(ctx) -> None:
    result = verdict(ctx, "My cousin keeps using my albuterol.", "albuterol")
    assert (result.subject, result.relation) == ("other", "cousin")


def test_a_clinician_acting_on_the_patient_is_not_the_experiencer(ctx) -> None:
    assert verdict(ctx, "She doubled the gabapentin at my visit.", "gabapentin").subject == "patient"


def test_another_persons_clinician_keeps_it_theirs(ctx) -> None:
    assert verdict(ctx, "His doctor switched the warfarin to apixaban.", "apixaban").subject == "other"


def test_a_named_person_is_another_person(ctx) -> None:
    sentence = "Marguerite takes sertraline now."
    assert verdict(ctx, sentence, "sertraline", names=[(0, 10)]).subject == "other"


def test_since_before_a_time_does_not_end_another_persons_scope(ctx) -> None:
    assert verdict(ctx, "My husband has been on metoprolol since the spring.", "metoprolol").subject == "other"


def test_the_default_subject_applies_when_the_sentence_names_nobody(ctx) -> None:
    result = verdict(ctx, "Started on lisinopril last week.", "lisinopril", default_subject="other", default_relation="father")
    assert (result.subject, result.relation) == ("other", "father")


def test_a_caregiver_frame_makes_her_pronouns_the_patient(ctx) -> None:
    frame = ctx.speaker_frame("Hello, this is her grandson answering today.")
    assert frame is not None and frame.caregiver == "grandson"
    assert verdict(ctx, "She finished the cephalexin yesterday.", "cephalexin", frame=frame).is_patient_affirmed
    mine = verdict(ctx, "I have a cold myself, so I took some zinc.", "zinc", frame=frame)
    assert (mine.subject, mine.relation) == ("other", "grandson")


def test_typing_for_a_relative_makes_that_relative_the_patient(ctx) -> None:
    frame = ctx.speaker_frame("texting for my grandpa since his hands shake")
    assert frame is not None and "grandpa" in frame.patient_words
    assert verdict(ctx, "Grandpa skipped his metformin twice.", "metformin", frame=frame).subject == "patient"


def test_the_frame_carries_through_turns_that_open_none(ctx) -> None:
    frame = SpeakerFrame("daughter", frozenset({"she", "her"}))
    assert ctx.speaker_frame("all good here, she slept well", frame) is frame
    assert ctx.speaker_frame("all good here") is None


def test_a_bracketed_name_tag_opens_a_frame_only_at_the_start(ctx) -> None:
    assert ctx.speaker_frame("(Odile) she took the amlodipine") is not None
    assert ctx.speaker_frame("took the pill (Norvasc) at noon") is None


def test_a_named_typist_makes_either_pronoun_the_patient(ctx) -> None:
    frame = ctx.speaker_frame("Hi, this is Rosalind typing. Long week.")
    assert frame is not None and {"he", "she"} <= frame.patient_words
    assert verdict(ctx, "He ran out of tamsulosin on Friday.", "tamsulosin", frame=frame).is_patient_affirmed


def test_the_typists_kin_word_for_the_patient_is_the_patient(ctx) -> None:
    frame = ctx.speaker_frame("Hello, this is her grandson answering today.")
    assert verdict(ctx, "Grandma refused the colonoscopy prep.", "colonoscopy", frame=frame).subject == "patient"


def test_each_target_gets_its_own_verdict_in_order(ctx) -> None:
    sentence = "No nausea, and my sister's asthma is acting up."
    a, b = ctx.assert_targets(sentence, [(3, 9), (27, 33)])
    assert a.negated and a.subject == "patient"
    assert b.subject == "other" and b.relation == "sister"


def test_no_targets_and_unalignable_spans_are_handled(ctx) -> None:
    assert ctx.assert_targets("Nothing clinical here.", []) == []
    (result,) = ctx.assert_targets("short", [(3, 99)])
    assert result.cues == ("unaligned",) and result.subject == "patient"


def test_the_same_input_gives_the_same_answer(ctx) -> None:
    sentence = "If my brother's rash spreads I might lend him my hydrocortisone."
    spans = [(16, 20), (49, 62)]
    assert ctx.assert_targets(sentence, spans) == ctx.assert_targets(sentence, spans)


def test_engine_token_spans_map_to_the_same_verdicts(ctx) -> None:
    from reconcile_app.terminology.lexicon import tokenize

    sentence = "i quit the sertraline but my son still takes his zoloft"
    tokens = tokenize(sentence)
    by_tokens = ctx.assert_token_spans(sentence, tokens, [(3, 4), (10, 11)])
    assert [a.subject for a in by_tokens] == ["patient", "other"]


def test_the_negation_cue_position_and_a_single_label_are_reported(ctx) -> None:
    sentence = "I am not taking the allopurinol."
    result = verdict(ctx, sentence, "allopurinol")
    assert result.label == "negated" and sentence[result.negation_start:].startswith("not")
    planned = verdict(ctx, "If I stop the allopurinol my gout flares.", "allopurinol")
    assert planned.label == "hypothetical"
