"""The reconciler's shortcuts (issue 14) give the answers of the full scans they replace."""
from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation import matching
from reconcile_app.reconciliation.engines.rules import RulesReconciler, _PastVerdicts
from reconcile_app.reconciliation.engines.rules.verdict import Context, _repeat_key
from reconcile_app.reconciliation.knowledge import _NEGATED_BEFORE, RedFlag, has_phrase, load_knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import RecordIndex

from .conftest import memory

# Sentences written for this test: red flags said, denied, someone else's, and plain chatter.
SENTENCES = [
    "my chest gets tight when I climb the stairs",
    "no chest pain at all this week",
    "my husband passed out at the store",
    "I fainted in the kitchen on Sunday",
    "those dizzy spells? no, not since the surgery",
    "my stools have been black for three days",
    "we went to the lake and grilled fish",
    "I've been coughing up a little blood in the mornings",
    "I woke up with my face swollen and my lips tingling",
    "the weather was lovely, we walked every day",
]


def _full_scan(flag: RedFlag, text: str) -> bool:
    # RedFlag.matches without its joined pattern
    probe = object.__new__(RedFlag)
    probe.__dict__.update(flag.__dict__)
    probe.__dict__["_any_pattern"] = None
    return probe.matches(text)


def test_a_red_flag_matches_as_its_full_scan() -> None:
    kb = load_knowledge()
    assert any(flag._any_pattern is not None for flag in kb.red_flags)
    hits = 0
    for sentence in SENTENCES:
        text = regex_text(sentence)
        for flag in kb.red_flags:
            assert flag.matches(text) == _full_scan(flag, text), (flag.id, sentence)
            hits += flag.matches(text)
    assert hits  # the sentences do say some red flags


def test_patterns_that_cannot_be_joined_are_scanned_one_by_one() -> None:
    import re

    flag = RedFlag("t", (re.compile(r"\b(\w+) and \1\b"),), (), "low", False, "t", (), (), (), (), (), False, "test")
    assert flag._any_pattern is None
    assert flag.matches("tired and tired") and not flag.matches("tired and sore")
    assert not _NEGATED_BEFORE.search("")


def _drugs_full_scan(text: str) -> tuple[list, set]:
    kb = load_knowledge()
    normed = norm(text)
    normed = " " + " ".join(w[:-1] if w.endswith("s") and len(w) > 4 and not w.endswith("ss") else w for w in normed.split()) + " " + normed
    drugs: list = []
    consumed = normed
    for term, drug in kb.drug_terms:
        if has_phrase(consumed, term):
            if drug not in drugs:
                drugs.append(drug)
            consumed = consumed.replace(f" {term} ", " | ")
    classes = {cid for term, cid in kb.class_terms if has_phrase(consumed, term)}
    return drugs, classes


def test_drugs_read_through_the_term_index_are_those_of_the_full_scan() -> None:
    said = ["I take my lisinopril and a baby aspirin every morning", "ran out of my water pill and my blood thinner",
            "been taking Advils for my back", "the Coumadin clinic changed my dose", "nothing new, just vitamins"]
    for text in said:
        drugs, classes = matching._drugs_in_text.__wrapped__(text, False)
        expected_drugs, expected_classes = _drugs_full_scan(text)
        assert list(drugs) == expected_drugs, text
        assert set(classes) <= expected_classes, text  # the second pass only keeps what the first found
    assert matching._drugs_in_text.__wrapped__("I take my lisinopril", False)[0]


def _raised_full(engine: RulesReconciler, history: list, ctx: Context) -> dict:
    past = Context(idx=ctx.idx, kb=ctx.kb, session_text="", history=())
    raised: dict = {}
    for m in history:
        key = _repeat_key(engine._judge(m, past), m)
        if key and (key not in raised or raised[key] < m.mention_time):
            raised[key] = m.mention_time
    return raised


def test_earlier_discrepancies_asked_lazily_are_those_of_judging_every_earlier_memory(record: ClinicalRecord) -> None:
    engine = RulesReconciler()
    first = memory("medication", "I quit my lisinopril, the cough was awful", attributes={"drug": "lisinopril", "action": "stopped"})
    history = [
        first,
        replace(first, mention_time=first.mention_time + timedelta(days=7), quote="still off the lisinopril"),
        memory("symptom", "my stools have been black and tarry this week", attributes={"name": "black stools"}),
        memory("lifestyle", "we went fishing at the lake on Saturday"),
        memory("care_activity", "I stopped checking my fasting glucose at home", attributes={"name": "glucose checks", "action": "stopped"}),
    ]
    ctx = Context(idx=RecordIndex(record, engine.kb), kb=engine.kb, session_text="", history=history)
    full = _raised_full(engine, history, ctx)
    assert full  # the history does raise discrepancies
    lazy = _PastVerdicts(engine, history, ctx)
    for key, latest in full.items():
        assert lazy.raised(key) == latest
    assert lazy.raised(("no-such-rule", "MedicationRequest/none", "")) is None
