"""Home readings named by what they measure, in lay words, and the near misses that are no reading."""
from __future__ import annotations

import pytest

from reconcile_app.narrative.engines.measurements import find_measurements


def _spo2(text: str) -> list[float]:
    return [v for m in find_measurements(text) if m.kind == "spo2" for v in (m.values or [m.value])]


@pytest.mark.parametrize(("text", "lowest"), [
    ("my oxygen on that clip-on finger gadget reads 89 after the stairs", 89.0),
    ("sats dropped to 90 when i was vacuuming", 90.0),
    ("my o2 level was 91 this morning, 95 later", 91.0),
])
def test_a_saturation_named_by_what_it_measures_is_read(text: str, lowest: float) -> None:
    assert min(_spo2(text)) == lowest


@pytest.mark.parametrize("text", [
    "my oxygen tank runs at 2 liters",
    "the o2 supplier came at 10 and left at 11",
    "oxygen is delivered every 14 days",
])
def test_oxygen_words_without_a_saturation_are_no_reading(text: str) -> None:
    assert _spo2(text) == []


@pytest.mark.parametrize("text", ["had a couple of scary lows this week", "went low twice at work", "two hypos overnight"])
def test_a_low_or_a_hypo_anchors_bare_numbers_as_glucose(text: str) -> None:
    kinds = {m.kind for m in find_measurements("57 and 49", context=text)}
    assert kinds == {"glucose"}
