"""ConText-style assertion and experiencer on chat sentences (pure functions, no lexicon)."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.engines import context as ctx
from reconcile_app.terminology.lexicon import lower_same_length, tokenize


def _assess(sentence: str, target: str) -> ctx.ContextResult:
    words = [t for t, _, _ in tokenize(lower_same_length(sentence))]
    parts = target.lower().split()
    for i in range(len(words) - len(parts) + 1):
        if words[i : i + len(parts)] == parts:
            return ctx.assess(words, i, i + len(parts))
    raise AssertionError(f"{target!r} not in {sentence!r}")


A, N, H, P, U = ctx.AFFIRMED, ctx.NEGATED, ctx.HYPOTHETICAL, ctx.HISTORICAL, ctx.UNCERTAIN

ASSERTIONS = [
    ("I take my atenolol every morning", "atenolol", A),
    ("no chest pain at all this week", "chest pain", N),
    ("Never had a mammogram in my life", "mammogram", N),
    ("I don't have any wheezing", "wheezing", N),
    ("denies nausea", "nausea", N),
    ("I didn't get the pneumonia shot", "pneumonia shot", N),
    ("without any swelling", "swelling", N),
    ("not even a headache", "headache", N),
    ("If my knee gets worse I might need a cortisone shot", "cortisone shot", H),
    ("what if I stopped the prednisone", "prednisone", H),
    ("maybe someday I can come off insulin", "insulin", H),
    ("I'm thinking about trying melatonin", "melatonin", H),
    ("my doctor wants me to start a statin", "statin", H),
    ("I might ask about the shingles vaccine", "shingles vaccine", H),
    ("I'll call about the rash tomorrow", "rash", H),
    ("ill call for the antibiotic if it spreads", "antibiotic", H),
    ("I need to get a colonoscopy", "colonoscopy", H),
    ("in case I get a migraine I keep sumatriptan", "migraine", H),
    ("someday I'll need a hip replacement", "hip replacement", H),
    ("I used to take warfarin", "warfarin", P),
    ("had asthma as a kid", "asthma", P),
    ("I broke out from penicillin years ago", "penicillin", P),
    ("history of kidney stones", "kidney stones", P),
    ("not sure if the itching is from the new soap", "itching", U),
    ("I think maybe I have the flu", "flu", U),
    ("maybe I'm allergic to cats", "cats", U),
    ("idk could be the lisinopril", "lisinopril", U),
    ("I guess the dizziness is from standing too fast", "dizziness", U),
    ("No problem with the metformin this week", "metformin", A),
    ("not bad, the cough is mostly gone", "cough", A),
    ("no more dizziness but my ankles swell", "ankles", A),
    ("I don't know if that's what you're asking but my back hurts", "back", A),
    ("if that's what you mean, I have a rash", "rash", A),
    ("I can barely feel my toes", "toes", A),
    ("not taking the naproxen, but I take Tylenol", "tylenol", A),
    ("I would say the fatigue is the worst part", "fatigue", A),
    ("The doctor said I don't have diabetes", "diabetes", N),
    ("never smoked", "smoked", N),
    ("I haven't had a seizure since March", "seizure", N),
    ("No fever or chills", "chills", N),
]


@pytest.mark.parametrize(("sentence", "target", "expected"), ASSERTIONS, ids=[a[0] for a in ASSERTIONS])
def test_assertion_of_the_target(sentence: str, target: str, expected: str) -> None:
    assert _assess(sentence, target).assertion == expected


SUBJECTS = [
    ("my dad takes metformin and I take lisinopril", "metformin", "other", "dad"),
    ("my dad takes metformin and I take lisinopril", "lisinopril", "patient", ""),
    ("my husband's ozempic is in the fridge", "ozempic", "other", "husband"),
    ("I tried one of my sister's oxycodone", "oxycodone", "patient", ""),
    ("My neighbor just started chemo", "chemo", "other", "neighbor"),
    ("His doctor started him on Jardiance", "jardiance", "other", "other person"),
    ("my roommate got diagnosed with asthma", "asthma", "other", "roommate"),
    ("she's on blood thinners since the afib", "blood thinners", "other", "other person"),
    ("my son has a peanut allergy", "peanut", "other", "son"),
    ("one of my clients is on dialysis", "dialysis", "other", "clients"),
    ("my wife had her flu shot and I got mine", "flu shot", "other", "wife"),
    ("My mother-in-law has dementia", "dementia", "other", "mother-in-law"),
    ("my dog is on prednisone", "prednisone", "other", "dog"),
    ("I picked up insulin for my mom", "insulin", "other", "mom"),
    ("Dr. Ruiz said my A1c was 8", "a1c", "patient", ""),
    ("She added glimepiride at breakfast", "glimepiride", "patient", ""),
    ("my daughter made me check my blood pressure", "blood pressure", "patient", ""),
    ("the nurse said I have a UTI", "uti", "patient", ""),
    ("my brother and I both have high cholesterol", "high cholesterol", "patient", ""),
    ("my friend's inhaler saved me, I used it twice", "inhaler", "other", "friend"),
    ("my grandkids gave me covid", "covid", "patient", ""),
    ("My coworker keeps talking about her keto diet while I eat salads", "salads", "patient", ""),
    ("a friend of mine takes Wegovy", "wegovy", "other", "friend"),
    ("My daughter's pediatrician said she has asthma", "asthma", "other", "daughter"),
    ("the endocrinologist said she wants me on Mounjaro", "mounjaro", "patient", ""),
    ("my neighbor gave me some of her Valium", "valium", "patient", ""),
    ("He had his gallbladder out", "gallbladder", "other", "other person"),
    ("the lady next to me at church had a stroke", "stroke", "other", "lady"),
    ("I gave my husband his eliquis", "eliquis", "other", "husband"),
    ("my husbands ozempic", "ozempic", "other", "husband"),
    ("a lady in my walking group had two knee replacements", "knee replacements", "other", "lady"),
    ("pain in my knee since Monday", "knee", "patient", ""),
]


@pytest.mark.parametrize(("sentence", "target", "subject", "relation"), SUBJECTS, ids=[f"{s[0]}|{s[1]}" for s in SUBJECTS])
def test_subject_of_the_target(sentence: str, target: str, subject: str, relation: str) -> None:
    result = _assess(sentence, target)
    assert result.subject == subject
    if relation:
        assert result.relation == relation


def test_possessive_owner_is_kept_when_the_patient_took_it() -> None:
    result = _assess("I've been taking one of my husband's pain pills at night", "pain pills")
    assert result.subject == "patient"
    assert result.owner == "husband"


def test_self_trigger_is_not_a_blanket_terminator() -> None:
    # "I" appears before the relation; the other person's scope still covers what follows them
    result = _assess("I told my mom her metoprolol looks like mine", "metoprolol")
    assert result.subject == "other"
