"""Who types a patient turn: caregiver frames opened, carried through the session and handed back (sentences written
for these tests; each phenomenon has paraphrases and a twin where the fact is not the patient's)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reconcile_app.fhir.clinical import ClinicalRecord, PatientInfo
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput
from tests.narrative.conftest import rules_extractor

AT = datetime(2026, 4, 2, 9, 30, tzinfo=timezone(timedelta(hours=-5)))


@pytest.fixture(scope="module")
def extractor() -> RulesExtractor:
    return rules_extractor(assertion="context")


def run(extractor: RulesExtractor, *texts: str, name: str = "") -> list[MemoryDraft]:
    turns = tuple(TurnInput(f"t{i + 1}", "coach" if i % 2 == 0 else "patient", AT + timedelta(minutes=i), t)
                  for i, t in enumerate(texts))
    record = ClinicalRecord(PatientInfo(id="pt", name=name), []) if name else None
    return extractor.extract_session(SessionInput("s1", AT, turns), record=record)


def clinical(drafts: list[MemoryDraft], turn: str | None = None) -> list[MemoryDraft]:
    return [d for d in drafts if d.category in ("medication", "symptom", "condition", "measurement")
            and (turn is None or d.anchor_turn_id == turn)]


def whose(drafts: list[MemoryDraft], word: str) -> set[str]:
    return {d.subject for d in clinical(drafts) if word in d.content.lower()}


# ---- a relative opens a frame: their reports about the patient are the patient's ----------------------------

@pytest.mark.parametrize("text", [
    "hi its his daughter on here, he quit the warfarin on friday cuz his gums bled",
    "Son here, typing for my father. He stopped his warfarin a week ago.",
    "It's her husband typing. She quit the warfarin Monday, the bruising scared her.",
    "Answering for him today since his hands shake. He has not taken the warfarin since the weekend.",
    "He's been off the warfarin since Friday, worried about bleeding. -- his wife",
])
def test_a_relatives_report_about_the_patient_is_the_patients(extractor, text) -> None:
    assert whose(run(extractor, "What is new since we last talked?", text), "warfarin") == {"patient"}


@pytest.mark.parametrize("text", [
    "This is his daughter. Dad skipped the eliquis all weekend. I'm on the same pill myself and I get nosebleeds.",
    "her son typing here. mom forgot her eliquis twice. i take metformin myself, my sugar was 180 today",
])
def test_the_typists_own_health_is_someone_elses(extractor, text) -> None:
    drafts = run(extractor, "What is new since we last talked?", text)
    assert whose(drafts, "apixaban") == {"patient"}
    mine = [d for d in clinical(drafts) if "nosebleed" in d.content.lower() or "bleeding" in d.content.lower()
            or "metformin" in d.content.lower() or d.category == "measurement"]
    assert mine and all(d.subject == "other" for d in mine)


def test_a_typist_signing_in_by_name_is_not_the_patient_when_the_record_names_the_patient(extractor) -> None:
    for name in ("Walt Quill", "Walter Quill"):  # the record's name or its short form
        drafts = run(extractor, "What is new since we last talked?",
                     "This is Rhonda. Walt has been skipping the lasix most days because of the bathroom trips.", name=name)
        assert whose(drafts, "furosemide") == {"patient"}
    drafts = run(extractor, "What is new since we last talked?",
                 "This is Rhonda. Gus has been skipping the lasix most days, his legs are swollen.", name="Walter Quill")
    assert whose(drafts, "furosemide") <= {"other"}  # someone else named: not the patient


def test_the_patient_signing_in_by_name_opens_no_frame(extractor) -> None:
    drafts = run(extractor, "What is new since we last talked?", "This is Walt. I stopped the lasix on Sunday.", name="Walt Quill")
    assert whose(drafts, "furosemide") == {"patient"}


# ---- the frame holds for the following turns of the session, until the patient is back ---------------------

def test_the_frame_carries_into_the_next_turn(extractor) -> None:
    drafts = run(extractor, "Morning! How is everyone?", "This is her son typing, she's resting.",
                 "Thanks for the update. How has her blood pressure been?",
                 "She stopped the lisinopril two weeks ago because of the cough.")
    assert whose(drafts, "lisinopril") == {"patient"}


def test_the_typists_first_person_in_a_later_turn_is_still_the_typist(extractor) -> None:
    drafts = run(extractor, "Morning! How is everyone?", "This is her son typing, she's resting.",
                 "Thanks! Anything new?", "I started metformin myself last month, doc says I'm prediabetic.")
    assert whose(drafts, "metformin") == {"other"}


@pytest.mark.parametrize("back", [
    "ok it's me again. I stopped the lisinopril two weeks ago because of the cough.",
    "Me again, he went home. I stopped the lisinopril two weeks ago because of the cough.",
    "Nora here. I stopped the lisinopril two weeks ago because of the cough.",
])
def test_the_patient_signing_back_ends_the_frame(extractor, back) -> None:
    drafts = run(extractor, "Hi Nora! How is everyone?", "This is her son typing, she's resting.",
                 "Thanks!", back, name="Nora Vance")
    assert whose(drafts, "lisinopril") == {"patient"}


def test_the_coach_turning_to_the_patient_by_name_ends_the_frame(extractor) -> None:
    drafts = run(extractor, "Hi Nora! How is everyone?", "This is her son typing, she's resting.",
                 "Thanks so much. Nora, when you are up, tell me how you feel.",
                 "Better. I stopped the lisinopril two weeks ago because of the cough.", name="Nora Vance")
    assert whose(drafts, "lisinopril") == {"patient"}


def test_sentences_before_a_mid_turn_frame_are_the_patients(extractor) -> None:
    drafts = run(extractor, "What helped this week?",
                 "I quit the lisinopril, the cough was awful. This is her daughter, can I add that she is sleeping better?")
    assert whose(drafts, "lisinopril") == {"patient"}


# ---- the negative twins: inside a frame, another woman or man just named keeps the pronoun -----------------

def test_a_pronoun_after_another_relative_named_in_the_frame_is_that_relative(extractor) -> None:
    drafts = run(extractor, "What is new since we last talked?",
                 "This is her granddaughter typing. Her sister Pilar is visiting. She is on warfarin and bruises a lot.")
    assert whose(drafts, "warfarin") == {"other"}


def test_without_a_frame_a_third_person_stays_another_person(extractor) -> None:
    drafts = run(extractor, "What is new since we last talked?", "My husband quit his warfarin on friday, his gums bled.")
    assert whose(drafts, "warfarin") == {"other"}


def test_a_relative_present_but_not_typing_leaves_the_patients_first_person(extractor) -> None:
    drafts = run(extractor, "What is new since we last talked?",
                 "My daughter is here with me, she says I've been forgetting my donepezil at night.")
    assert whose(drafts, "donepezil") == {"patient"}


def test_an_exclamation_that_looks_like_a_sign_in_opens_no_frame(extractor) -> None:
    drafts = run(extractor, "What is new since we last talked?", "This is Awesome! I quit the lisinopril and the cough is gone.")
    assert whose(drafts, "lisinopril") == {"patient"}



# ---- a bare sign-in by another name, the patient then named in the third person -----------------------------

def test_a_bare_sign_in_followed_by_the_patient_by_name_is_the_typists_first_person(extractor) -> None:
    drafts = run(extractor, "Anything else this week?",
                 "This is Dorian. My pressure has been high so my doctor put me on a new pill, amlodipine. "
                 "Walt nags me about it.", name="Walt Quill")
    assert whose(drafts, "amlodipine") == {"other"}


def test_the_patients_own_doctor_stays_the_patients_without_a_frame(extractor) -> None:
    drafts = run(extractor, "Anything else this week?", "My doctor put me on a new pill, amlodipine.", name="Walt Quill")
    assert whose(drafts, "amlodipine") == {"patient"}
    drafts = run(extractor, "Anything else this week?",
                 "This is Walt. My doctor put me on a new pill, amlodipine. Dorian nags me about it.", name="Walt Quill")
    assert whose(drafts, "amlodipine") == {"patient"}


def test_a_caregivers_report_of_the_patients_doctor_stays_the_patients(extractor) -> None:
    drafts = run(extractor, "Anything else this week?", "This is his daughter. His doctor put him on amlodipine.",
                 name="Walt Quill")
    assert whose(drafts, "amlodipine") == {"patient"}
