"""The temporal resolver: chat expressions against a fixed anchor (Monday 2026-0105 18:02 -05:00)."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from reconcile_app.narrative.engines.temporal import find_all, resolve

TZ = timezone(timedelta(hours=-5))
ANCHOR = datetime(2026, 1, 5, 18, 2, tzinfo=TZ)  # a Monday
NOW = "now"

# (text, expected start date, expected end date or NOW for "up to the anchor")
CASES = [
    ("couple weeks back", date(2025, 12, 19), date(2025, 12, 25)),
    ("since thanksgiving", date(2025, 11, 27), NOW),
    ("last tues", date(2025, 12, 30), date(2025, 12, 30)),
    ("2 days ago", date(2026, 1, 3), date(2026, 1, 3)),
    ("in march", date(2025, 3, 1), date(2025, 3, 31)),
    ("this morning", date(2026, 1, 5), date(2026, 1, 5)),
    ("yesterday", date(2026, 1, 4), date(2026, 1, 4)),
    ("since Thursday", date(2026, 1, 1), NOW),
    ("about 3 weeks", date(2025, 12, 15), NOW),
    ("a few days ago", date(2026, 1, 2), date(2026, 1, 2)),
    ("last month", date(2025, 12, 1), date(2025, 12, 31)),
    ("over the weekend", date(2026, 1, 3), date(2026, 1, 4)),
    ("earlier this week", date(2026, 1, 5), date(2026, 1, 5)),
    ("I haven't used my inhaler in about 3 weeks", date(2025, 12, 15), NOW),
    ("Few weeks. Then I quit", date(2025, 12, 15), NOW),
    ("for 10 yrs", date(2016, 1, 6), NOW),
    ("like 2 wks ago", date(2025, 12, 19), date(2025, 12, 25)),
    ("back in august", date(2025, 8, 1), date(2025, 8, 31)),
    ("jan 2", date(2026, 1, 2), date(2026, 1, 2)),
    ("Dec 20th", date(2025, 12, 20), date(2025, 12, 20)),
    ("on 12/20", date(2025, 12, 20), date(2025, 12, 20)),
    ("since we got home Saturday", date(2026, 1, 3), NOW),
    ("mine was from like 2016", date(2016, 1, 1), date(2016, 12, 31)),
    ("in 2019", date(2019, 1, 1), date(2019, 12, 31)),
    ("since 2016", date(2016, 1, 1), NOW),
    ("2-3 nights a week for the last month", date(2025, 12, 6), NOW),
    ("the last 2 nights", date(2026, 1, 3), NOW),
    ("christmas eve", date(2025, 12, 24), date(2025, 12, 24)),
    ("since christmas", date(2025, 12, 25), NOW),
    ("new year's eve", date(2025, 12, 31), date(2025, 12, 31)),
    ("memorial day", date(2025, 5, 26), date(2025, 5, 26)),
    ("a month ago", date(2025, 11, 21), date(2025, 12, 21)),
    ("this past weekend", date(2026, 1, 3), date(2026, 1, 4)),
    ("on the 4th of july", date(2025, 7, 4), date(2025, 7, 4)),
    ("last night", date(2026, 1, 4), date(2026, 1, 5)),
    ("five days", date(2025, 12, 31), NOW),
    ("three weeks back", date(2025, 12, 12), date(2025, 12, 18)),
    ("a couple of days ago", date(2026, 1, 3), date(2026, 1, 3)),
    ("last summer", date(2025, 6, 1), date(2025, 8, 31)),
    ("yesterday morning", date(2026, 1, 4), date(2026, 1, 4)),
    ("this afternoon", date(2026, 1, 5), date(2026, 1, 5)),
    ("earlier this month", date(2026, 1, 1), NOW),
    ("back in 2019", date(2019, 1, 1), date(2019, 12, 31)),
    ("for a week now", date(2025, 12, 29), NOW),
    ("on the 12th", date(2025, 12, 12), date(2025, 12, 12)),
    ("over the holidays", date(2025, 12, 20), date(2026, 1, 2)),
    ("next tuesday", date(2026, 1, 6), date(2026, 1, 6)),
    ("bought it at the store sat when I was out", date(2026, 1, 3), date(2026, 1, 3)),
    ("the day before yesterday", date(2026, 1, 3), date(2026, 1, 3)),
]


@pytest.mark.parametrize(("text", "start", "end"), CASES, ids=[c[0] for c in CASES])
def test_resolves_chat_expression_relative_to_the_turn(text: str, start: date, end: object) -> None:
    found = resolve(text, ANCHOR)
    assert found is not None, text
    assert found.start is not None and found.end is not None
    assert found.start.date() == start
    if end == NOW:
        assert found.end == ANCHOR
    else:
        assert found.end.date() == end
    assert found.start <= found.end
    assert found.text and found.text.lower() in text.lower()


NO_TIME = [
    "hello there",
    "I sat down for a bit",
    "we walked in the sun",
    "took 1/2 a pill",
    "my pressure was 150/95",
    "Week 3!",
    "I see him next week sometime maybe",
    "recently things have been fine",
    "may I ask something",
    "march on",
]


@pytest.mark.parametrize("text", NO_TIME)
def test_gives_nothing_when_the_text_names_no_time(text: str) -> None:
    found = resolve(text, ANCHOR)
    if text.startswith("I see him next week"):
        # "next week" is not resolved to a past interval; nothing past is invented
        assert found is None or found.start >= ANCHOR.replace(hour=0, minute=0)
    else:
        assert found is None


def test_an_instant_has_equal_start_and_end() -> None:
    found = resolve("about an hour ago", ANCHOR)
    assert found is not None and found.start == found.end == ANCHOR - timedelta(hours=1)


def test_is_deterministic_and_pure() -> None:
    assert resolve("since thanksgiving", ANCHOR) == resolve("since thanksgiving", ANCHOR)
    later = ANCHOR + timedelta(days=400)
    assert resolve("since thanksgiving", later).start.date() == date(2026, 11, 26)


def test_finds_every_expression_in_order() -> None:
    found = find_all("Stopped it Sunday, then restarted yesterday", ANCHOR)
    assert [f.text for f in found] == ["Sunday", "yesterday"]


@pytest.mark.parametrize("text", ["\x00\x01 since \u202e thanksgiving", "<b>yesterday</b>", "🙂" * 1000, "9" * 5000])
def test_never_raises_on_hostile_text(text: str) -> None:
    resolve(text, ANCHOR)
