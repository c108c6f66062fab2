"""Another person's medicine said with a kin or social noun as subject ("my uncle started ..."), or with third-person
possessives around a listed allergen: not the patient's use; each with a first-person twin that still fires."""
from __future__ import annotations

import pytest

from .test_cond_phenomena import QUEUED, WARFARIN, judge


@pytest.mark.parametrize(("category", "quote", "twin"), [
    ("care_activity", "my uncle started oxycodone after his surgery so some days I drive him to the pharmacy",
     "I started oxycodone after my surgery so some days I drive to the pharmacy"),
    ("medication", "our neighbour is on tramadol for her back and swears by it",
     "I am on tramadol for my back and swear by it"),
])
def test_a_kin_subject_takes_the_medicine_not_the_patient(category: str, quote: str, twin: str) -> None:
    assert judge(WARFARIN, category, quote).kind not in QUEUED
    assert judge(WARFARIN, category, twin).kind in QUEUED


def test_another_persons_dose_of_a_listed_allergen_is_not_an_exposure() -> None:
    other = judge(WARFARIN, "allergy", "His dentist has him taking amoxicillin before every cleaning, for his heart valve.")
    assert other.kind not in QUEUED
    mine = judge(WARFARIN, "allergy", "My dentist has me taking amoxicillin before every cleaning, for my heart valve.")
    assert mine.kind == "contradiction" and mine.rule == "allergy-listed-allergen-reaction"


def _two_sentences(first: str, second: str) -> list:
    from .conftest import memory
    return [memory("medication", first), memory("lifestyle", second, subject="other")]


def test_a_repaired_possessive_hands_the_medicine_to_someone_else() -> None:
    from .test_cond_phenomena import ENGINE
    first = "Collected my apixaban at the chemist on the way home,"
    repaired = ENGINE.reconcile(_two_sentences(first, "no wait, not mine, my brother's, he has been on it since his clot."), WARFARIN)
    assert repaired[0].kind not in QUEUED
    kept = ENGINE.reconcile(_two_sentences(first, "and my brother came along for the drive since his clot."), WARFARIN)
    assert kept[0].kind in QUEUED
