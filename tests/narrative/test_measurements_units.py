"""A number is read as its following unit: a distance, a time or a count after a sugar word is not a blood sugar."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.engines.measurements import find_measurements


@pytest.mark.parametrize("text", [
    "my numbers on the stair test were better, i climbed 40 feet more than last time",
    "the sugar talk at the clinic was long, i walked 90 yards to the car after",
    "my readings at rehab went up, 60 laps of the track",
    "meter says i did 120 steps on the treadmill warmup",
])
def test_a_distance_or_count_after_a_sugar_word_is_not_a_glucose(text: str) -> None:
    assert not [m for m in find_measurements(text) if m.kind == "glucose"]


@pytest.mark.parametrize(("text", "value"), [
    ("my sugar was 48 this morning and i was shaky", 48),
    ("the meter said 310 after dinner", 310),
    ("fasting numbers 92 and 104 this week", 104),
])
def test_a_sugar_reading_is_still_read(text: str, value: float) -> None:
    assert [m.value for m in find_measurements(text) if m.kind == "glucose"][-1] == value


@pytest.mark.parametrize(("text", "values"), [
    ("my son got me a finger oxygen gadget, on the stairs it says 85 or 86 and resting it goes back to 93", [85, 86, 93]),
    ("the pulse oximeter dropped to 84% when i vacuumed", [84]),
    ("that oxygen clip from the pharmacy read 89 this morning", [89]),
])
def test_a_home_oximeter_named_in_lay_words_gives_saturations(text: str, values: list[float]) -> None:
    [spo2] = [m for m in find_measurements(text) if m.kind == "spo2"]
    assert spo2.value == min(values) and (spo2.values or [spo2.value]) == values


def test_the_oximeters_pulse_is_not_a_saturation() -> None:
    found = find_measurements("the fingertip pulse ox thing said pulse 96 on the treadmill")
    assert not [m for m in found if m.kind == "spo2"]


@pytest.mark.parametrize(("text", "values", "best"), [
    ("i've been doing the blow tube every morning, it's been 280, 300, 290 all week and my best is 420", [280, 300, 290], 420),
    ("the thing i blow into says 310 and 320 lately, personal best of 400", [310, 320], 400),
    ("my peak flow was 250 this morning", [250], None),
])
def test_peak_flows_named_in_lay_words_keep_the_personal_best(text: str, values: list[float], best: float | None) -> None:
    [pf] = [m for m in find_measurements(text) if m.kind == "peak_flow"]
    assert (pf.values or [pf.value]) == values and pf.baseline == best
