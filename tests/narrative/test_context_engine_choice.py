"""The rules extractor with either assertion engine (EXTRACTION_ASSERTION): conversations written for these tests."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.assertion import default_context
from reconcile_app.narrative.engines import context as ctx
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.engines.rules.assertion import ContextAssertions, assertion_engine
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput

AT = datetime(2026, 4, 14, 9, 30, tzinfo=timezone.utc)


def session(*texts: str) -> SessionInput:
    """Coach and patient take turns, the coach first."""
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), text)
                  for i, text in enumerate(texts))
    return SessionInput("s1", AT, turns)


@pytest.fixture(scope="module")
def by_context() -> RulesExtractor:
    return RulesExtractor(assertion="context")


@pytest.fixture(scope="module")
def by_own() -> RulesExtractor:
    return RulesExtractor(assertion="own")


def meds(drafts: list[MemoryDraft]) -> dict[str, MemoryDraft]:
    return {d.attributes.get("drug") or d.attributes.get("drug_class"): d for d in drafts if d.category == "medication"}


def test_the_setting_names_the_engine(settings) -> None:
    settings.EXTRACTION_ASSERTION = "context"
    assert RulesExtractor().assertion == "context"
    settings.EXTRACTION_ASSERTION = "own"
    assert RulesExtractor().assertion == "own"


def test_an_unknown_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="assertion engine"):
        assertion_engine("negex")


def test_the_version_tells_the_engines_apart(by_context, by_own) -> None:
    base = type(by_own).base_version
    assert by_own.version.startswith(base) and "-context" not in by_own.version
    assert by_context.version.startswith(f"{base}-context")


@pytest.mark.parametrize("engine", ["own", "context"])
@pytest.mark.parametrize("text,drug,subject,assertion", [
    ("Picked up the losartan refill and I take it every night.", "losartan", "patient", "affirmed"),
    ("My sister is on sertraline for her nerves.", "sertraline", "other", "affirmed"),
    ("If the swelling comes back I might ask about furosemide.", "furosemide", "patient", "hypothetical"),
    ("I used to take omeprazole back in my forties.", "omeprazole", "patient", "historical"),
])
def test_both_engines_read_plain_phrasings_alike(engine: str, text: str, drug: str, subject: str, assertion: str) -> None:
    drafts = RulesExtractor(assertion=engine).extract_session(session("Anything new with your medicines?", text))
    found = meds(drafts)[drug]
    assert (found.subject, found.assertion) == (subject, assertion)


def test_a_stop_said_with_a_negation_keeps_its_action(by_context) -> None:
    # the own engine's negation_at (a token index) comes from ConText's cue offset: "don't" holds spaCy's "n't"
    drafts = by_context.extract_session(session("How is the statin going?", "I don't take the atorvastatin anymore."))
    found = meds(drafts)["atorvastatin"]
    assert found.subject == "patient" and found.attributes.get("action") == "stopped"


@pytest.mark.parametrize("answer", [
    "He finally started insulin on Friday.",
    "Started insulin on Friday, the endo finally agreed.",
])
def test_the_discourse_layer_gives_context_its_default_subject(by_context, answer: str) -> None:
    # the coach asked about the husband: a sentence naming nobody before the drug is about him
    drafts = by_context.extract_session(session("How is your husband doing with his diabetes?", answer))
    assert meds(drafts)["insulin"].subject == "other"


def test_the_patient_speaking_of_themself_ends_the_carried_person(by_context) -> None:
    drafts = by_context.extract_session(session(
        "How is your daughter feeling?", "She's better. I ran out of my metoprolol though."))
    assert meds(drafts)["metoprolol"].subject == "patient"


def test_a_caregiver_typing_reports_the_patients_own_doses(by_context) -> None:
    drafts = by_context.extract_session(session(
        "Good morning, how did the week go?", "This is her son typing. She quit the amlodipine on Sunday."))
    found = meds(drafts)["amlodipine"]
    assert found.subject == "patient" and found.attributes.get("action") == "stopped"


@pytest.mark.parametrize("text,drug", [
    ("A guy on a podcast says berberine works like metformin.", "berberine"),
    ("Saw an ad for semaglutide during the game.", "semaglutide"),
])
def test_hearsay_and_media_are_not_the_patients_use(by_context, text: str, drug: str) -> None:
    found = meds(by_context.extract_session(session("Anything on your mind?", text))).get(drug)
    assert found is None or not (found.subject == "patient" and found.assertion == "affirmed")


class _CountingEngine:
    """The shared ConText component, counting its runs."""

    def __init__(self) -> None:
        self.inner = default_context()
        self.runs = 0

    def analyse(self, *args, **kwargs):
        self.runs += 1
        return self.inner.analyse(*args, **kwargs)

    def speaker_frame(self, *args, **kwargs):
        return self.inner.speaker_frame(*args, **kwargs)


def test_one_context_run_per_sentence_whatever_its_targets() -> None:
    counting = _CountingEngine()
    extractor = RulesExtractor(assertion="context")
    extractor.assertions = ContextAssertions(counting)
    extractor.extract_session(session(
        "How are things?",
        "I stopped the lisinopril and the amlodipine, my ankles were swelling and I had a cough. Walked twice this week."))
    assert counting.runs == 2  # two sentences with targets, however many targets each holds


def test_a_sentence_with_nothing_to_judge_costs_no_run() -> None:
    counting = _CountingEngine()
    extractor = RulesExtractor(assertion="context")
    extractor.assertions = ContextAssertions(counting)
    extractor.extract_session(session("How are things?", "Pretty quiet week honestly."))
    assert counting.runs == 0


def test_triggers_of_a_rules_own_keep_the_own_engine() -> None:
    # a rule passing its own list ("the wish carries its own negation") is judged by context.py
    words = "i don't take the aspirin".split()
    assert ctx.assess(words, 4, 5, triggers=[]).assertion == ctx.AFFIRMED
    assert ctx.assess(words, 4, 5).assertion == ctx.NEGATED
