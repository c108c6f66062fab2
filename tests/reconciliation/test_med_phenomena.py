"""Medication phenomena end to end (extractor + reconciler on the synthetic records): a drug named by its class or
purpose and then by a pronoun, short misspellings, partial-adherence frames, stop verbs without a drug object, and OTC
products, supplements and borrowed prescriptions against the record. Each phenomenon has its trap twins (negated,
hypothetical, someone else's, carried rather than taken). Sentences written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import SessionInput, TurnInput
from reconcile_app.reconciliation.engines.rules import RulesReconciler
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.reconciliation.types import FindingDraft
from reconcile_app.terminology.lexicon import default_lexicon, tokenize
from tests.narrative.conftest import rules_extractor

from .conftest import load_record, rules_reconciler

AT = datetime(2026, 3, 4, 17, 30, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def engines() -> tuple[RulesExtractor, RulesReconciler]:
    return rules_extractor(), rules_reconciler()


@pytest.fixture(scope="module")
def rules_record() -> ClinicalRecord:
    return load_record("reconcile_rules_patient.json")  # warfarin, lisinopril, metformin; CKD, OA knee


def findings(engines, record: ClinicalRecord, *texts: str) -> list[FindingDraft]:
    """The findings of a conversation: coach and patient turns alternate, the coach first."""
    extractor, reconciler = engines
    if len(texts) == 1:
        texts = ("Anything new this week?", texts[0])
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), text)
                  for i, text in enumerate(texts))
    memories = extractor.extract_session(SessionInput("s1", AT, turns), record=record)
    return [citation_gate(d, record) for d in reconciler.reconcile(memories, record, history=())]


def discrepancies(found: list[FindingDraft]) -> list[FindingDraft]:
    return [f for f in found if f.kind in ("contradiction", "gap")]


def cited(finding: FindingDraft) -> set[str]:
    return {c.id for c in finding.citations}


# ---- 1. a drug named by class or purpose, then "it" ----------------------------------------------------------------


@pytest.mark.parametrize(("question", "answer"), [
    ("Are you still on the blood thinner?", "nah I ditched that one a while ago"),
    ("How's it going with your blood thinner?", "stopped it on saturday, too many bruises"),
    ("Any trouble with the blood thinners lately?", "quit them last week tbh"),
])
def test_a_pronoun_answering_a_question_about_a_class_is_the_records_drug_of_that_class(engines, meds, question, answer) -> None:
    stops = [f for f in discrepancies(findings(engines, meds, question, answer)) if f.rule == "med-stopped-active"]
    assert stops and "m-apixaban" in cited(stops[0]) and stops[0].safety_critical


@pytest.mark.parametrize(("question", "answer"), [
    ("How is the weekly pill for your bones?", "honestly I just take it every day now, easier"),
    ("How is your bone medicine going?", "oh that one I take daily with breakfast"),
    ("Anything about your meds?", "the pill for my bones, I take it each morning now with the rest"),
])
def test_a_weekly_drug_named_by_its_purpose_and_taken_daily_is_safety_critical(engines, meds, question, answer) -> None:
    more = [f for f in discrepancies(findings(engines, meds, question, answer)) if f.rule == "med-schedule-more"]
    assert more and "m-alendronate" in cited(more[0]) and more[0].severity == "high" and more[0].safety_critical


@pytest.mark.parametrize(("question", "answer"), [
    ("How was the road trip?", "long. we stopped it halfway and slept in a motel"),
    ("Did you see the new film?", "that one I watched twice, loved it"),
    ("Are you still on the blood thinner?", "my husband quit his, but I'm still taking mine"),
    ("How is the weekly pill for your bones?", "if I took it every day I'd worry, so I don't"),
])
def test_no_drug_stop_without_a_drug_of_the_patients_own(engines, meds, question, answer) -> None:
    found = discrepancies(findings(engines, meds, question, answer))
    assert not [f for f in found if f.rule in ("med-stopped-active", "med-schedule-more")]


def test_the_pill_for_a_purpose_is_not_the_contraceptive_pill(engines, meds) -> None:
    stops = [f for f in discrepancies(findings(engines, meds, "so the pill for my sugar, I quit it on monday"))
             if f.rule == "med-stopped-active"]
    assert stops and "m-metformin" in cited(stops[0])


def test_a_record_display_in_its_salt_or_acid_form_is_the_generic() -> None:
    from reconcile_app.terminology.lexicon import _record_names
    lex = default_lexicon()
    assert _record_names("alendronic acid 70 MG Oral Tablet", "drug", lex)[0][1] == "alendronate"
    assert _record_names("lithium carbonate 300 MG Oral Capsule", "drug", lex)[0][1] == "lithium"
    assert _record_names("Levothyroxine Sodium 0.1 MG Oral Tablet", "drug", lex)[0][1] == "levothyroxine"


# ---- 2. misspelt names ---------------------------------------------------------------------------------------------


def _admitted(text: str) -> set[str]:
    lex = default_lexicon()
    return {c.suggestion for c in lex.near_misses(tokenize(text), set()) if c.admitted}


@pytest.mark.parametrize(("word", "drug"), [("lithum", "lithium"), ("eliqus", "apixaban"), ("lisinipril", "lisinopril")])
def test_a_name_missing_one_letter_is_admitted(word: str, drug: str) -> None:
    assert drug in _admitted(f"i stopped my {word} friday")


@pytest.mark.parametrize("text", [
    "we listened to milton on the radio", "little by little i got better", "almost forgot the garden",
    "the breeze was lovely", "that made a huge difference honestly",
])
def test_english_words_and_names_are_not_misspelt_drugs(text: str) -> None:
    assert _admitted(text) == set()


def test_a_misspelt_stop_contradicts_the_order(engines, meds) -> None:
    stops = [f for f in discrepancies(findings(engines, meds, "I quit the lithum about a week ago")) if f.rule == "med-stopped-active"]
    assert stops and "m-lithium" in cited(stops[0])


# ---- 3. partial adherence in everyday words, and its twins ---------------------------------------------------------


LESS = ("med-schedule-less", "med-dose-less")


@pytest.mark.parametrize(("said", "rules", "order"), [
    ("popped an extra lithium last night, couldn't settle", ("med-dose-more",), "m-lithium"),
    ("been stretching my eliquis, every 2 days till payday", LESS, "m-apixaban"),
    ("the eliquis I do every other day now to save money", LESS, "m-apixaban"),
    ("metformin? only one outta the two these days", LESS, "m-metformin"),
    ("gave the metformin a little holiday this month", ("med-stopped-active",), "m-metformin"),
])
def test_partial_adherence_contradicts_the_order(engines, meds, said: str, rules: tuple[str, ...], order: str) -> None:
    hits = [f for f in discrepancies(findings(engines, meds, said)) if f.rule in rules]
    assert hits and order in cited(hits[0])


@pytest.mark.parametrize("said", [
    "never once took a break from the eliquis, promise",
    "I haven't had any holiday from the metformin at all",
    "if I ever ran out of lithium I would call the clinic right away",
    "my brother doubled up on his eliquis, scary",
])
def test_negated_hypothetical_or_someone_elses_adherence_is_no_contradiction(engines, meds, said: str) -> None:
    found = discrepancies(findings(engines, meds, said))
    assert not [f for f in found if f.kind == "contradiction"]


# ---- 4. stop verbs without a drug object ----------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "answer"), [
    ("How is the lisinopril treating you?", "fine. stopped worrying about it honestly"),
    ("How's the warfarin going?", "all good, I stopped by the pharmacy yesterday for more"),
    ("Still on the metformin?", "yep. quit my night job though, so less stress"),
    ("How's the warfarin?", "fine, gave up going to the gym, knee is too sore"),
])
def test_a_stop_of_an_activity_or_a_visit_is_not_a_drug_stop(engines, rules_record, question, answer) -> None:
    found = discrepancies(findings(engines, rules_record, question, answer))
    assert not [f for f in found if f.rule == "med-stopped-active"]


# ---- 5. OTC products, supplements and borrowed prescriptions against the record -------------------------------------


@pytest.mark.parametrize("said", [
    "been taking goody's powder for my headaches most days",
    "an alka seltzer most mornings for my stomach",
    "the BC powders help my back, I take a couple a day",
])
def test_aspirin_powders_and_antacids_with_warfarin_are_a_safety_gap(engines, rules_record, said: str) -> None:
    gaps = [f for f in discrepancies(findings(engines, rules_record, said)) if f.rule.startswith("med-undocumented")]
    assert gaps and gaps[0].safety_critical and "medrx-warfarin" in cited(gaps[0])


def test_diclofenac_gel_is_listed_but_not_safety_critical(engines, rules_record) -> None:
    found = [f for f in discrepancies(findings(engines, rules_record, "rubbing voltaren gel on my knee at night"))
             if f.rule.startswith("med-undocumented")]
    assert found and not found[0].safety_critical and found[0].severity == "low"


def test_vitamin_e_with_warfarin_is_a_gap_citing_the_warfarin(engines, rules_record) -> None:
    gaps = [f for f in discrepancies(findings(engines, rules_record, "started vitamin E 400 units daily"))
            if f.rule.startswith("med-undocumented")]
    assert gaps and "medrx-warfarin" in cited(gaps[0]) and gaps[0].severity == "medium"


def test_the_interaction_table_holds_the_otc_and_supplement_rows() -> None:
    pairs = {frozenset((r.a, r.b)): r for r in load_knowledge().interactions}
    for a, b, severity in [("drug:kava", "class:benzodiazepine", "medium"), ("drug:kava", "condition:liver_disease", "high"),
                           ("drug:vitamin e", "class:anticoagulant", "medium"), ("class:grapefruit", "drug:atorvastatin", "low"),
                           ("class:topical_nsaid", "class:anticoagulant", "low")]:
        row = pairs[frozenset((a, b))]
        assert row.severity == severity and row.source


@pytest.mark.parametrize("said", [
    "swiped a few of my wife's xanax to sleep",
    "been using some of my brother's prednisone for the wheeze",
    "I've been taking my daughter's leftover percocet for my knee",
])
def test_another_persons_medicine_taken_by_the_patient_is_a_borrowed_prescription(engines, rules_record, said: str) -> None:
    gaps = [f for f in discrepancies(findings(engines, rules_record, said)) if f.rule == "med-undocumented-someone-else"]
    assert gaps


@pytest.mark.parametrize("said", [
    "I took my wife's xanax over to her at work",
    "my husband takes oxycodone for his back",
    "picked up my son's prednisone at the pharmacy",
])
def test_another_persons_medicine_carried_or_taken_by_them_is_not_the_patients(engines, rules_record, said: str) -> None:
    assert not [f for f in discrepancies(findings(engines, rules_record, said)) if f.category == "medication"]


@pytest.mark.parametrize(("question", "answer", "rule", "order"), [
    ("Are you still on the blood thinner?", "nope, gave up a while back", "med-stopped-active", "m-apixaban"),
    ("Still doing the weekly bone pill?", "yep every day now", "med-schedule-more", "m-alendronate"),
])
def test_a_short_answer_to_a_question_naming_a_class_is_about_the_records_one_order_of_it(engines, meds, question, answer,
                                                                                          rule, order) -> None:
    hits = [f for f in discrepancies(findings(engines, meds, question, answer)) if f.rule == rule]
    assert hits and order in cited(hits[0])


@pytest.mark.parametrize(("question", "answer"), [
    ("Still taking your blood thinner?", "no problems with it at all"),
    ("Are you still on the water pill?", "nope"),  # no active diuretic in the record: nothing to contradict
])
def test_a_short_answer_that_denies_no_use_or_names_no_order_is_no_contradiction(engines, meds, question, answer) -> None:
    assert not [f for f in discrepancies(findings(engines, meds, question, answer)) if f.kind == "contradiction"]


@pytest.mark.parametrize(("said", "borrowed"), [
    ("My sister had a UTI in the spring and still has pills, the cipro. I've been taking hers since Monday.", True),
    ("My dad got Norco after his surgery and has extra. I took his when my back went out.", True),
    ("My husband takes Xanax. I take his blood pressure readings every night.", False),
    ("My wife has oxycodone for her back. I never touch hers.", False),
])
def test_another_persons_supply_named_by_a_possessive_pronoun(engines, rules_record, said: str, borrowed: bool) -> None:
    gaps = [f for f in discrepancies(findings(engines, rules_record, said)) if f.rule == "med-undocumented-someone-else"]
    assert bool(gaps) == borrowed


@pytest.mark.parametrize(("question", "answer"), [
    ("How are the mood pills?", "I used to skip them in college but not anymore"),
    ("Anything new?", "used to forget my lithium a lot, I don't anymore since the alarm"),
])
def test_a_past_lapse_that_has_ended_is_no_stop(engines, meds, question, answer) -> None:
    assert not [f for f in discrepancies(findings(engines, meds, question, answer)) if f.kind == "contradiction"]
