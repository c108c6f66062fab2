"""Home readings in chat text: weights from a scale (one, a series, an earlier value to compare with), a pulse from a
cuff or a watch, an INR from a clinic, a viral load from a letter, sugars read off a meter, and bare numbers that answer
a question about one measure."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.engines.measurements import find_measurements


def only(text: str, context: str = "") -> dict:
    [m] = find_measurements(text, context=context)
    return {"kind": m.kind, "value": m.value, "values": m.values, "baseline": m.baseline, "daily": m.daily, "unit": m.unit}


def test_a_scale_reading_with_an_earlier_clinic_weight_keeps_both() -> None:
    got = only("the bathroom scale said 184 this morning and i was 192 at my checkup in march")
    assert (got["kind"], got["value"], got["baseline"]) == ("weight", 184.0, 192.0)


def test_a_daily_weight_log_is_one_series_from_its_first_reading() -> None:
    got = only("weights this week: 201 monday, 203 tuesday, 206 wednesday")
    assert got["values"] == [201.0, 203.0, 206.0] and got["baseline"] == 201.0 and got["daily"]


def test_kilograms_stay_kilograms() -> None:
    got = only("the scale at the gym showed 71.5 kg, i was 76 kg after new year")
    assert (got["unit"], got["value"], got["baseline"]) == ("kg", 71.5, 76.0)


@pytest.mark.parametrize("text", [
    "i squatted 135 pounds at the gym today",
    "hauled three 40-pound bags of mulch from the truck",
    "i'm 71 and my wife is 68, no weighing in this house",
])
def test_a_load_or_an_age_is_not_a_body_weight(text: str) -> None:
    assert not [m for m in find_measurements(text) if m.kind == "weight"]


def test_a_watch_reporting_bare_numbers_in_a_turn_about_a_racing_heart_is_a_pulse() -> None:
    got = only("my watch keeps saying my heart is racing, it showed 124 and 131 while i sat reading")
    assert (got["kind"], got["value"], got["values"]) == ("heart_rate", 131.0, [124.0, 131.0])


def test_a_pulse_named_next_to_a_blood_pressure_cuff_is_a_pulse_not_a_pressure() -> None:
    assert only("the bp cuff shows my pulse is 118 tonight")["kind"] == "heart_rate"


def test_a_number_from_an_anticoagulation_clinic_is_an_inr() -> None:
    got = only("at the coumadin clinic the nurse said it was 4.2")
    assert (got["kind"], got["value"]) == ("inr", 4.2)


def test_a_viral_load_with_thousands_separators() -> None:
    got = only("the letter says my viral load came back 15,600")
    assert (got["kind"], got["value"]) == ("viral_load", 15600.0)


def test_a_number_got_from_a_meter_later_in_the_turn_is_a_glucose() -> None:
    got = only("my sister lent me her meter for my sugar since i've been so thirsty. so after lunch i got 212 and it spooked me")
    assert (got["kind"], got["value"]) == ("glucose", 212.0)


def test_bare_numbers_answering_a_question_about_sugars_are_sugars() -> None:
    got = only("58 at work, 61 before bed", context="how have your sugars been? do you have any numbers?")
    assert (got["kind"], got["values"]) == ("glucose", [58.0, 61.0])


def test_bare_numbers_without_a_question_about_a_measure_are_nothing() -> None:
    assert find_measurements("58 at work, 61 before bed", context="how was the trip?") == []
