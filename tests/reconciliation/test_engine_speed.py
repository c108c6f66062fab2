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


def test_red_flags_screened_per_text_are_those_each_row_matches() -> None:
    kb = load_knowledge()
    for sentence in SENTENCES:
        text = regex_text(sentence)
        assert kb.red_flags_in(text) == [f for f in kb.red_flags if f.matches(text)], sentence
        assert kb.red_flags_in(text) == kb.red_flags_in(text)  # asked again: the kept answer
    assert any(kb.red_flags_in(regex_text(s)) for s in SENTENCES)


def test_a_changed_red_flag_table_is_screened_afresh() -> None:
    import re

    kb = replace(load_knowledge())
    kb.red_flags_in("i fainted twice")
    kb.red_flags = kb.red_flags + [RedFlag("t", (re.compile(r"\b(\w+) and \1\b"),), (), "low", False, "t", (), (), (), (), (), False, "test")]
    assert [f.id for f in kb.red_flags_in("tired and tired")][-1:] == ["t"]


# Sentences written for this test: table terms said plainly, inside longer phrases, misspelled, or not at all.
TERM_SENTENCES = [
    "they gave me a flu shot and a tetanus booster at the pharmacy",
    "my left knee replacement still aches when it rains",
    "had a colonoscopy last spring, the prep was the worst part",
    "my high blood pressure and type 2 diabetes are both under control",
    "allergic to penicillin and shellfish since I was a kid",
    "started some st johns wart and fish oyl from the health store",
    "nothing to report, we went bowling",
]


def test_table_terms_found_by_word_runs_are_those_of_testing_every_row() -> None:
    for table in ("conditions", "vaccines", "allergens", "procedures", "sites"):
        for sentence in TERM_SENTENCES:
            normed = norm(sentence)
            assert matching._find(table, sentence) == {i for t, i in matching._terms(table) if has_phrase(normed, t)}, (table, sentence)
    assert matching._find("vaccines", TERM_SENTENCES[0]) and matching._find("procedures", TERM_SENTENCES[2])


def test_misspelled_multiword_drugs_found_by_shape_are_those_of_the_full_scan() -> None:
    def full_scan(consumed: str) -> list:
        tokens = [t for t in consumed.split() if t != "|"]
        out = []
        for term, k, drug in matching._multiword_terms():
            if any(window[0] == term[0] and abs(len(window) - len(term)) <= 1 and window != term and matching._one_edit(window, term)
                   for window in (" ".join(tokens[i:i + k]) for i in range(len(tokens) - k + 1))):
                out.append(drug)
        return out

    terms = [t for t, _k, _d in matching._multiword_terms()][:40]
    misspelled = [t[:3] + ("a" if t[3] != "a" else "e") + t[4:] for t in terms] + [t[:-1] for t in terms]
    for text in [*TERM_SENTENCES, *(f"i take {t} daily" for t in misspelled)]:
        assert matching._fuzzy_phrase_drugs(norm(text)) == full_scan(norm(text)), text
    assert any(matching._fuzzy_phrase_drugs(norm(f"i take {t} daily")) for t in misspelled)


def test_plan_mentions_kept_per_text_are_new_each_call() -> None:
    from reconcile_app.reconciliation.engines.rules import plantext

    text = "I went running twice and had some deli meat"
    first = plantext.mentions(text)
    first.setdefault("made-up", []).append(0)
    for spots in first.values():
        spots.append(999)
    again = plantext.mentions(text)
    assert "made-up" not in again and all(999 not in spots for spots in again.values())
    assert plantext.mentions(text, allowed=set()) == {}
    assert matching.stems({"walking", "boxes", "cats", "walked", "is"}) == {"walk", "box", "cat", "walk", "is"}


def test_what_the_patient_did_kept_per_text_is_a_new_set_each_call() -> None:
    from reconcile_app.reconciliation.engines.rules import plantext

    text = "climbed the ladder to clean the gutters, no salami though"
    first = plantext.done_by_patient(text)
    first.add("made-up")
    assert "made-up" not in plantext.done_by_patient(text)
    assert plantext.done_by_patient(text, set()) == set()


def test_needed_words_of_a_pattern_are_in_every_match() -> None:
    import re

    from reconcile_app.reconciliation.knowledge import _needed_words

    assert _needed_words(re.compile(r"\bchest\W+(?:pain|tight\w*)")) == {"chest"}
    assert _needed_words(re.compile(r"\b(?:black|tarry)\W+stools?")) == {"black", "tarry"}  # the first of equals
    assert _needed_words(re.compile(r"\b(?:vomit\w*|threw up)\b")) == {"vomit", "threw up"}
    assert _needed_words(re.compile(r"(?:very\s+)?\w+")) is None  # every part optional or a class
    assert _needed_words(re.compile(r"chest pain", re.IGNORECASE)) is None
    assert _needed_words(re.compile(r"(?i:chest) pain")) == {" pain"}
    assert _needed_words(re.compile(r"(?:ab)+c?")) == {"ab"}
    kb = load_knowledge()
    for flag in kb.red_flags:
        for pattern in flag.patterns:
            needed = _needed_words(pattern)
            for sentence in SENTENCES + TERM_SENTENCES:
                text = regex_text(sentence)
                if needed is not None and pattern.search(text):
                    assert any(n in text for n in needed), (flag.id, pattern.pattern, sentence)
