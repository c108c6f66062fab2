"""Dosing schedules: how often and when an order is taken (its dosageInstruction) against what the patient says they do."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from reconcile_app.fhir.clinical import ClinicalEntry
from reconcile_app.reconciliation.knowledge import regex_text

from .cues import pattern as cue_pattern_of
from .verdict import _as_needed

# data/cues/med_frequency.json: "I do the pillbox on Sundays" is the pillbox's rhythm, not the doses'
CHORE_EVENT = cue_pattern_of("chore_event")
INTAKE_EVENT = cue_pattern_of("intake_event")

DOSING_PATH = Path(__file__).resolve().parents[2] / "data" / "dosing.json"

_NUMBER = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# FHIR R4 Timing.when codes by the time of day they fall in (http://hl7.org/fhir/event-timing)
_WHEN = {"MORN": "morning", "MORN.early": "morning", "MORN.late": "morning", "ACM": "morning", "CM": "morning", "PCM": "morning",
         "WAKE": "morning", "NOON": "midday", "AFT": "midday", "ACD": "midday", "CD": "midday", "PCD": "midday",
         "EVE": "evening", "EVE.early": "evening", "EVE.late": "evening", "ACV": "evening", "CV": "evening", "PCV": "evening",
         "NIGHT": "night", "HS": "night", "PHS": "night"}
_PER_WEEK = {"h": 168.0, "d": 7.0, "wk": 1.0, "mo": 12 / 52, "a": 1 / 52}


@dataclass(frozen=True)
class Schedule:
    """Doses per week (None when not said) and the times of day named."""

    per_week: float | None
    times: frozenset[str]


@dataclass(frozen=True)
class ScheduleConflict:
    action: str  # "less", "more" or "timing"
    said: str  # what the patient said, in the finding's words
    ratio: float = 1.0  # doses said per doses ordered, when both are known


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    data = json.loads(DOSING_PATH.read_text(encoding="utf-8"))
    compiled: dict[str, Any] = {}
    for key in ("order_frequency", "stated_frequency"):
        compiled[key] = [(re.compile(r["pattern"]), r["per_week"]) for r in data[key]]
    compiled["times"] = [(re.compile(r["pattern"]), r["time"]) for r in data["times"]]
    for key in ("irregular", "only", "dropped_time", "moved", "empty_stomach_order", "with_food_said", "one_of_several"):
        compiled[key] = re.compile(data[key]["pattern"])
    return compiled


# a clock time said with am/pm ("at 2:30 pm", "9pm"): its hour says the part of the day, so "pm" alone is no evening
_CLOCK = re.compile(r"\b(1[0-2]|0?[1-9])(?::[0-5]\d)?\s*([ap])\.?m\b\.?")


def _clock_part(hour: int, half: str) -> str:
    """The part of the day an hour falls in, by everyday usage (morning to noon, afternoon to five, evening to nine,
    then night); the times table then reads these words as FHIR Timing.when periods."""
    hour = hour % 12 + (12 if half == "p" else 0)
    if 4 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    return "evening" if 17 <= hour < 21 else "night"


def times_in(text: str) -> frozenset[str]:
    text = _CLOCK.sub(lambda m: _clock_part(int(m.group(1)), m.group(2)), text)
    return frozenset(time for rx, time in _table()["times"] if rx.search(text))


def order_schedule(entry: ClinicalEntry) -> Schedule:
    """The order's doses per week and times of day: FHIR Timing.repeat first, then the words of its instructions."""
    per_week: float | None = None
    times: set[str] = set()
    for dosage in (entry.raw or {}).get("dosageInstruction") or []:
        repeat = ((dosage or {}).get("timing") or {}).get("repeat") or {} if isinstance(dosage, dict) else {}
        freq, period, unit = repeat.get("frequency"), repeat.get("period"), repeat.get("periodUnit")
        if isinstance(freq, (int, float)) and isinstance(period, (int, float)) and period > 0 and unit in _PER_WEEK:
            per_week = (per_week or 0.0) + freq / period * _PER_WEEK[unit]
        times |= {_WHEN[w] for w in repeat.get("when") or [] if w in _WHEN}
    text = _dosage_text(entry)
    if per_week is None:
        # the frequency said first is the order's ("every evening, except 1.5 tablets on Mondays")
        hits = [(hit.start(), float(value)) for rx, value in _table()["order_frequency"] if (hit := rx.search(text))]
        per_week = min(hits)[1] if hits else None
    return Schedule(per_week, frozenset(times) | times_in(text))


def _dosage_text(entry: ClinicalEntry) -> str:
    """The order's dosage instructions only: a note about monitoring ("INR every 4 weeks") is not its schedule."""
    raw = entry.raw or {}
    texts = [str(d.get("text") or "") for d in raw.get("dosageInstruction") or [] if isinstance(d, dict)]
    return regex_text(" ".join(texts) if any(texts) else entry.detail or "")


def stated_per_week(text: str) -> float | None:
    """Doses a week in the patient's words ("3 or 4 days a week" is 3.5), or None when not said."""
    for rx, value in _table()["stated_frequency"]:
        hit = next((h for h in rx.finditer(text) if not _of_a_chore(text, h.start())), None)
        if hit is None:
            continue
        if value != "n":
            return float(value)
        low = _count(hit.group("n"))
        high = _count(hit.group("m")) if hit.group("m") else low
        return (low + high) / 2
    return None


def _of_a_chore(text: str, at: int) -> bool:
    """The nearest event before a frequency (within its last three words) is an errand or gathering, not a dose: the
    frequency attaches to it (late closure), as in "do the pillbox on sundays" or "a meeting in town on thursdays";
    "the pill box the alendronate goes in every morning" names the drug's own event nearer."""
    window = " ".join(text[:at].split()[-3:])
    chores = [h.end() for h in CHORE_EVENT.finditer(window)]
    if not chores:
        return False
    return not any(h.start() >= max(chores) for h in INTAKE_EVENT.finditer(window))


def _count(word: str) -> float:
    return float(_NUMBER.get(word, 0) or int(word))


def schedule_conflict(entry: ClinicalEntry, said: str) -> ScheduleConflict | None:
    """What the patient says of how often or when they take an order that the order does not allow: fewer doses
    (some days a week, only one of two daily doses, when remembered), more (a weekly drug daily) or another time."""
    if _as_needed(entry):
        return None  # an as-needed order has no schedule to fall short of
    order = order_schedule(entry)
    text = regex_text(said)
    for rule in (_fewer_days, _dropped_dose_time, _irregular, _moved_time):
        found = rule(order, text)
        if found is not None:
            return found
    return _empty_stomach(entry, text)


def _fewer_days(order: Schedule, text: str) -> ScheduleConflict | None:
    """A stated number of doses a week well below or above the order's ("four days a week" for a daily pill,
    "every morning" for a weekly one, "every week" for one every two weeks)."""
    said = stated_per_week(text)
    if said is None or order.per_week is None:
        return None
    # days a week said against the order's days a week: "every other day" falls short of a twice-daily order as well
    if said < min(order.per_week, 7) * 0.75 and not (said == 7 and order.per_week > 7):
        return ScheduleConflict("less", f"{_per_week_words(said)} (ordered {_per_week_words(order.per_week)})", said / order.per_week)
    if said > order.per_week * 1.5 and order.per_week <= 1:
        return ScheduleConflict("more", f"{_per_week_words(said)} (ordered {_per_week_words(order.per_week)})", said / order.per_week)
    return None


def _dropped_dose_time(order: Schedule, text: str) -> ScheduleConflict | None:
    """One of several daily doses left out: "only the morning one", "skipping the bedtime dose", "am yes, pm no"."""
    if order.per_week is None or order.per_week < 14:
        return None
    if _table()["one_of_several"].search(text):
        return ScheduleConflict("less", f"one dose a day (ordered {_per_week_words(order.per_week)})", 7 / order.per_week)
    dropped = _table()["dropped_time"].search(text)
    if dropped is not None:
        time = next(iter(times_in(dropped.group("time") or dropped.group("time2"))), "")
        return ScheduleConflict("less", f"leaving out the {time} dose (ordered {_per_week_words(order.per_week)})")
    only = _table()["only"].search(text)
    said_times = times_in(text[only.end():only.end() + 40]) if only else frozenset()
    if len(said_times) == 1 and (not order.times or said_times < order.times or len(order.times) >= 2):
        time = next(iter(said_times))
        return ScheduleConflict("less", f"only the {time} dose (ordered {_per_week_words(order.per_week)})")
    return None


def _irregular(order: Schedule, text: str) -> ScheduleConflict | None:
    """Doses taken when remembered or on and off, for a scheduled daily order."""
    if order.per_week is None or order.per_week < 7 or not _table()["irregular"].search(text):
        return None
    return ScheduleConflict("less", f"taking it irregularly (ordered {_per_week_words(order.per_week)})")


def _moved_time(order: Schedule, text: str) -> ScheduleConflict | None:
    """A once-a-day order for one time of day said to be taken at another ("moved it to bedtime")."""
    if len(order.times) != 1 or order.per_week is None or order.per_week > 7 or not _table()["moved"].search(text):
        return None
    said = times_in(text) - order.times
    if len(said) != 1 or {"evening", "night"} >= (said | order.times):
        return None  # evening and bedtime are the same dose in everyday speech
    time = next(iter(said))
    return ScheduleConflict("timing", f"a {time} dose (ordered for the {next(iter(order.times))})")


def _empty_stomach(entry: ClinicalEntry, text: str) -> ScheduleConflict | None:
    """The order says empty stomach, plain water or apart from calcium; the patient takes it with a meal or antacids."""
    if not _table()["empty_stomach_order"].search(_dosage_text(entry)):
        return None
    hit = _table()["with_food_said"].search(text)
    if hit is None:
        return None
    return ScheduleConflict("timing", f"taking it {hit.group(0)} (ordered apart from food or other medicines)")


def _per_week_words(value: float) -> str:
    if value >= 14:
        return f"{value / 7:g} times a day"
    if value >= 7:
        return "daily"
    if value == 1:
        return "once a week"
    if value < 1:
        return f"every {7 / value / 7:g} weeks" if value >= 0.2 else "less than monthly"
    return f"about {value:g} days a week"
