"""Deterministic resolution of chat time expressions ("couple weeks back", "since thanksgiving") against a turn's time.

Hand-written rather than dateparser: a pure function of (text, anchor), about 20x faster, and it never
invents a time: `resolve` returns None when the text holds no expression it understands. Instants come
back as intervals of their natural grain (a day, a week, a month); durations ("for 3 weeks", "since
Thursday") end at the anchor; approximate offsets ("about 3 weeks ago") get a window around the point.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Callable

from reconcile_app.narrative.types import EventTime

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "couple": 2, "a couple": 2, "a couple of": 2, "couple of": 2, "few": 3, "a few": 3, "several": 3,
    "a half": 0.5, "half a": 0.5, "half an": 0.5, "a couple a": 2, "couple a": 2,
}
_NUM = r"(?P<num>\d{1,3}(?:\.\d)?|a couple of|a couple a|a couple|couple of|couple a|couple|a few|few|several|half an?|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)"
_UNIT = r"(?P<unit>minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|wks?|wk|months?|mos?|years?|yrs?|yr)"
_HEDGE = r"(?:(?:about|around|like|almost|nearly|over|maybe|roughly|approximately|approx|just|only|at least|more than|a little over|probably|prolly)\s+)*"

_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tues": 1, "tue": 1, "wednesday": 2, "wed": 2, "weds": 2,
    "thursday": 3, "thurs": 3, "thur": 3, "thu": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}
_AMBIGUOUS_DAYS = {"sat", "sun", "wed", "mon"}  # also ordinary words: need a preposition
_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
_AMBIGUOUS_MONTHS = {"may", "mar", "jan", "jun", "jul", "aug", "sep", "dec", "oct", "nov", "feb", "apr", "march"}
_DAY_RE = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    lo: datetime
    hi: datetime


def _day_start(d: date, tz) -> datetime:
    return datetime.combine(d, time(0, 0), tzinfo=tz)


def _day_end(d: date, tz) -> datetime:
    return datetime.combine(d, time(23, 59, 59), tzinfo=tz)


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _num(text: str) -> float:
    text = re.sub(r"\s+", " ", text.strip())
    if text in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[text])
    try:
        return float(text)
    except ValueError:
        return 0.0


def _unit_delta(unit: str, n: float) -> tuple[timedelta, str]:
    u = unit.rstrip("s")
    if u in ("minute", "min"):
        return timedelta(minutes=n), "minute"
    if u in ("hour", "hr"):
        return timedelta(hours=n), "hour"
    if u in ("day", "night"):
        return timedelta(days=n), "day"
    if u in ("week", "wk"):
        return timedelta(weeks=n), "week"
    if u in ("month", "mo"):
        return timedelta(days=round(30.44 * n)), "month"
    return timedelta(days=round(365.25 * n)), "year"


def _holiday(name: str, year: int) -> date | None:
    name = name.replace("'", "").replace("\u2019", "")
    if name.startswith("thanksgiving"):
        first = date(year, 11, 1)
        return first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    if name in ("christmas eve",):
        return date(year, 12, 24)
    if name.startswith("christmas") or name == "xmas":
        return date(year, 12, 25)
    if name in ("new years eve", "nye"):
        return date(year - 1, 12, 31) if False else date(year, 12, 31)
    if name.startswith("new year"):
        return date(year, 1, 1)
    if name in ("fourth of july", "4th of july", "july 4th", "july fourth", "independence day"):
        return date(year, 7, 4)
    if name == "halloween":
        return date(year, 10, 31)
    if name.startswith("valentine"):
        return date(year, 2, 14)
    if name == "memorial day":
        last = date(year, 5, 31)
        return last - timedelta(days=last.weekday())
    if name == "labor day":
        first = date(year, 9, 1)
        return first + timedelta(days=(0 - first.weekday()) % 7)
    if name.startswith("mothers day"):
        first = date(year, 5, 1)
        return first + timedelta(days=(6 - first.weekday()) % 7 + 7)
    if name.startswith("fathers day"):
        first = date(year, 6, 1)
        return first + timedelta(days=(6 - first.weekday()) % 7 + 14)
    if name == "easter":
        a, b, c = year % 19, year // 100, year % 100
        d, e = b // 4, b % 4
        f = (b + 8) // 25
        g = (b - f + 1) // 3
        h = (19 * a + b - d - g + 15) % 30
        i, k = c // 4, c % 4
        l_ = (32 + 2 * e + 2 * i - h - k) % 7
        m = (a + 11 * h + 22 * l_) // 451
        month = (h + l_ - 7 * m + 114) // 31
        day = ((h + l_ - 7 * m + 114) % 31) + 1
        return date(year, month, day)
    return None


_HOLIDAY_RE = (r"(?P<hol>thanksgiving|christmas eve|christmas|xmas|new year'?s eve|new year'?s(?: day)?|new year|"
               r"fourth of july|4th of july|july 4th|july fourth|independence day|halloween|valentine'?s(?: day)?|"
               r"memorial day|labor day|mother'?s day|father'?s day|easter)")


class _Resolver:
    def __init__(self, low: str, anchor: datetime):
        self.low = low
        self.anchor = anchor
        self.tz = anchor.tzinfo
        self.today = anchor.date()
        self.found: list[_Found] = []

    def day(self, d: date) -> tuple[datetime, datetime]:
        return _day_start(d, self.tz), min(_day_end(d, self.tz), self.anchor) if d == self.today else _day_end(d, self.tz)

    def span(self, a: date, b: date) -> tuple[datetime, datetime]:
        hi = _day_end(b, self.tz)
        return _day_start(a, self.tz), min(hi, self.anchor) if b >= self.today else hi

    def add(self, m: re.Match, lo: datetime, hi: datetime, group: int | str = 0) -> None:
        if lo > hi:
            lo, hi = hi, lo
        self.found.append(_Found(m.start(group), m.end(group), lo, hi))

    def run(self) -> None:
        for rule in RULES:
            rule(self)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + pattern + r"(?![a-z0-9])")


_AGO = _rx(_HEDGE + _NUM + r"[\s-]*" + _UNIT + r"\s+(?:ago|back|before|earlier|prior)")
_DURATION = _rx(r"(?:for|in|over|from)\s+(?:the\s+)?(?:last|past)?\s*" + _HEDGE + _NUM + r"[\s-]*" + _UNIT
                + r"(?:\s+(?:now|straight|in a row|running))?")
_LAST_N = _rx(r"(?:the\s+)?(?:last|past)\s+" + _HEDGE + _NUM + r"[\s-]*" + _UNIT)
_BARE_N = _rx(_HEDGE + _NUM + r"[\s-]*" + _UNIT + r"(?:\s+(?:now|straight|in a row))?")
_FOR_THE_LAST = _rx(r"(?:for|in|over)\s+the\s+(?:last|past)\s+(?P<unit>day|night|week|month|year)")
_SIMPLE = _rx(
    r"(?P<w>the day before yesterday|yesterday morning|yesterday afternoon|yesterday evening|last night|yesterday|"
    r"earlier today|this morning|this afternoon|this evening|tonight|today|this am|this pm|"
    r"earlier this week|this week|last week|past week|earlier this month|this month|last month|past month|"
    r"this year|last year|past year|"
    r"this past weekend|last weekend|over the weekend|this weekend|the weekend|on the weekend|"
    r"the other day|other night|the other night|a week ago|a month ago|a year ago)"
)
_WEEKDAY = _rx(r"(?P<pre>(?:this past|this coming|next|last|this|on|past|by|coming)\s+)?(?P<d>" + _DAY_RE + r")(?P<part>\s+(?:morning|night|afternoon|evening))?")
_MONTH_DAY = _rx(r"(?P<m>" + _MONTH_RE + r")\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?")
_DAY_OF_MONTH = _rx(r"(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<m>" + _MONTH_RE + r")(?:,?\s+(?P<y>\d{4}))?")
_MONTH = _rx(r"(?P<pre>(?:back in|in|during|early|late|mid|last|this|around|end of|beginning of|start of|the end of|the start of|the beginning of)\s+)?(?P<m>" + _MONTH_RE + r")(?:\s+(?P<y>\d{4}))?")
_YEAR = _rx(r"(?P<pre>(?:back in|in|from|like|around|circa|of|since)\s+(?:like\s+)?)(?P<y>(?:19[5-9]\d|20\d\d))")
_NUMERIC = _rx(r"(?P<pre>on\s+)?(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:/(?P<y>\d{2}|\d{4}))?")
_ISO = _rx(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})")
_HOLIDAY = _rx(_HOLIDAY_RE)
_ORDINAL_DAY = _rx(r"(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)(?!\s+of)")
_HOLIDAYS_SPAN = _rx(r"(?:over|during|for|since|after|before)\s+the\s+holidays")
_SEASON = _rx(r"(?P<pre>last|this|this past|over the)\s+(?P<s>spring|summer|fall|autumn|winter)")


def _rule_ago(r: _Resolver) -> None:
    for m in _AGO.finditer(r.low):
        n = _num(m.group("num"))
        if n <= 0:
            continue
        delta, grain = _unit_delta(m.group("unit"), n)
        point = r.anchor - delta
        if grain in ("minute", "hour"):
            r.add(m, point, point)
        elif grain == "day":
            r.add(m, *r.day(point.date()))
        elif grain == "week":
            r.add(m, *r.span(point.date() - timedelta(days=3), min(point.date() + timedelta(days=3), r.today)))
        elif grain == "month":
            r.add(m, *r.span(point.date() - timedelta(days=15), min(point.date() + timedelta(days=15), r.today)))
        else:
            r.add(m, *r.span(point.date() - timedelta(days=182), min(point.date() + timedelta(days=182), r.today)))


def _duration(r: _Resolver, m: re.Match) -> None:
    n = _num(m.group("num"))
    if n <= 0:
        return
    delta, grain = _unit_delta(m.group("unit"), n)
    lo = r.anchor - delta
    if grain not in ("minute", "hour"):
        lo = _day_start(lo.date(), r.tz)
    r.add(m, lo, r.anchor)


def _future_in(text: str, m: re.Match) -> bool:
    """"in 3 weeks" is future unless the sentence is a negated perfect ("haven't ... in 3 weeks")."""
    if not m.group(0).startswith("in "):
        return False
    before = text[: m.start()]
    return not re.search(r"\b(haven'?t|hasn'?t|not|no|never|didn'?t|first time|since|been)\b", before)


def _rule_duration(r: _Resolver) -> None:
    for m in _DURATION.finditer(r.low):
        if _future_in(r.low, m):
            n = _num(m.group("num"))
            delta, _ = _unit_delta(m.group("unit"), n)
            point = r.anchor + delta
            r.add(m, _day_start(point.date(), r.tz), _day_end(point.date(), r.tz))
            continue
        _duration(r, m)
    for m in _LAST_N.finditer(r.low):
        _duration(r, m)
    for m in _FOR_THE_LAST.finditer(r.low):
        delta, _ = _unit_delta(m.group("unit"), 1)
        r.add(m, _day_start((r.anchor - delta).date(), r.tz), r.anchor)


def _rule_bare(r: _Resolver) -> None:
    """"Couple weeks." as an answer, "about 3 weeks": a duration ending now, unless it is a frequency."""
    for m in _BARE_N.finditer(r.low):
        if m.group("num") in ("a", "an"):
            continue  # "a week" alone is a frequency ("twice a week"), not a time
        after = r.low[m.end() : m.end() + 12]
        before = r.low[max(0, m.start() - 8) : m.start()]
        if re.match(r"\s*(ago|back|before|earlier|prior|old|later|from now)", after):
            continue
        if re.match(r"\s*(a|an|per|each|every|of)\b", after) or re.search(r"(\d|times|every|per|each|a|in|for|last|past|-)\s*$", before):
            continue
        if re.search(r"\b(week|day|month)\s*$", before):
            continue
        _duration(r, m)


def _rule_simple(r: _Resolver) -> None:
    today, wd = r.today, r.today.weekday()
    for m in _SIMPLE.finditer(r.low):
        w = m.group("w")
        a = r.anchor
        if w in ("today", "earlier today", "this am", "this pm"):
            r.add(m, *r.day(today))
        elif w == "this morning":
            r.add(m, datetime.combine(today, time(5, 0), tzinfo=r.tz), min(a, datetime.combine(today, time(12, 0), tzinfo=r.tz)))
        elif w == "this afternoon":
            r.add(m, datetime.combine(today, time(12, 0), tzinfo=r.tz), min(a, datetime.combine(today, time(17, 0), tzinfo=r.tz)))
        elif w in ("this evening", "tonight"):
            r.add(m, datetime.combine(today, time(17, 0), tzinfo=r.tz), datetime.combine(today, time(23, 59, 59), tzinfo=r.tz))
        elif w == "yesterday":
            r.add(m, *r.day(today - timedelta(days=1)))
        elif w == "yesterday morning":
            y = today - timedelta(days=1)
            r.add(m, datetime.combine(y, time(5, 0), tzinfo=r.tz), datetime.combine(y, time(12, 0), tzinfo=r.tz))
        elif w in ("yesterday afternoon",):
            y = today - timedelta(days=1)
            r.add(m, datetime.combine(y, time(12, 0), tzinfo=r.tz), datetime.combine(y, time(17, 0), tzinfo=r.tz))
        elif w in ("yesterday evening", "last night"):
            y = today - timedelta(days=1)
            r.add(m, datetime.combine(y, time(17, 0), tzinfo=r.tz), datetime.combine(today, time(5, 0), tzinfo=r.tz))
        elif w == "the day before yesterday":
            r.add(m, *r.day(today - timedelta(days=2)))
        elif w in ("this week",):
            r.add(m, *r.span(today - timedelta(days=wd), today))
        elif w == "earlier this week":
            r.add(m, *r.span(today - timedelta(days=wd), max(today - timedelta(days=1), today - timedelta(days=wd))))
        elif w in ("last week",):
            start = today - timedelta(days=wd + 7)
            r.add(m, *r.span(start, start + timedelta(days=6)))
        elif w in ("past week", "a week ago"):
            r.add(m, *r.span(today - timedelta(days=7), today)) if w == "past week" else r.add(m, *r.span(today - timedelta(days=10), today - timedelta(days=4)))
        elif w in ("this month", "earlier this month"):
            r.add(m, *r.span(today.replace(day=1), today))
        elif w == "last month":
            first = _add_months(today.replace(day=1), -1)
            r.add(m, *r.span(first, today.replace(day=1) - timedelta(days=1)))
        elif w == "past month":
            r.add(m, *r.span(_add_months(today, -1), today))
        elif w == "a month ago":
            point = _add_months(today, -1)
            r.add(m, *r.span(point - timedelta(days=15), min(point + timedelta(days=15), today)))
        elif w == "this year":
            r.add(m, *r.span(date(today.year, 1, 1), today))
        elif w == "last year":
            r.add(m, *r.span(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)))
        elif w == "past year":
            r.add(m, *r.span(today - timedelta(days=365), today))
        elif w == "a year ago":
            point = today - timedelta(days=365)
            r.add(m, *r.span(point - timedelta(days=182), min(point + timedelta(days=182), today)))
        elif "weekend" in w:
            if w == "this weekend" and wd >= 5:
                sat = today - timedelta(days=wd - 5)
            else:
                sat = today - timedelta(days=(wd - 5) % 7 or 7)
                if w == "last weekend" and wd >= 5:
                    sat -= timedelta(days=7)
            r.add(m, *r.span(sat, min(sat + timedelta(days=1), today)))
        elif w in ("the other day",):
            r.add(m, *r.span(today - timedelta(days=7), today - timedelta(days=1)))
        elif w in ("other night", "the other night"):
            r.add(m, *r.span(today - timedelta(days=7), today - timedelta(days=1)))


def _rule_weekday(r: _Resolver) -> None:
    for m in _WEEKDAY.finditer(r.low):
        name, pre = m.group("d"), (m.group("pre") or "").strip()
        if name in _AMBIGUOUS_DAYS and not pre and not _bare_day_ok(r.low, m):
            continue
        target = _WEEKDAYS[name]
        if pre in ("next", "this coming", "coming"):
            ahead = (target - r.today.weekday()) % 7 or 7
            d = r.today + timedelta(days=ahead)
            r.add(m, _day_start(d, r.tz), _day_end(d, r.tz))
            continue
        back = (r.today.weekday() - target) % 7
        if back == 0 and pre != "this":
            back = 7
        d = r.today - timedelta(days=back)
        if pre in ("last",) and back < 2:
            d -= timedelta(days=7)
        lo, hi = r.day(d)
        r.add(m, lo, hi)


_NOT_BEFORE_DAY = frozenset("i we he she they you the a an in and just had have has it that this to".split())
_AFTER_DAY = frozenset("when i we morning night afternoon evening and after before while at".split())


def _bare_day_ok(low: str, m: re.Match) -> bool:
    """"got it at the store sat when..." is a day; "I sat down" and "in the sun" are not."""
    prev = re.findall(r"[a-z']+", low[max(0, m.start() - 20) : m.start()])
    nxt_text = low[m.end("d") : m.end("d") + 20]
    nxt = re.findall(r"[a-z']+|[,.!?;]", nxt_text)
    if prev and prev[-1] in _NOT_BEFORE_DAY:
        return False
    return not nxt or nxt[0] in _AFTER_DAY or nxt[0] in {",", ".", "!", "?", ";"}


def _month_year(r: _Resolver, month: int, year: str | None, pre: str = "") -> int:
    if year:
        return int(year)
    if month > r.today.month or (pre == "last" and month == r.today.month):
        return r.today.year - 1
    return r.today.year


def _rule_month(r: _Resolver) -> None:
    taken: list[tuple[int, int]] = []
    for rx in (_MONTH_DAY, _DAY_OF_MONTH):
        for m in rx.finditer(r.low):
            month = _MONTHS[m.group("m")]
            try:
                day = int(m.group("d"))
                year = _month_year(r, month, m.group("y"))
                d = date(year, month, day)
            except ValueError:
                continue
            if d > r.today and not m.group("y"):
                d = date(year - 1, month, day)
            r.add(m, *r.day(d))
            taken.append((m.start(), m.end()))
    for m in _MONTH.finditer(r.low):
        if any(s <= m.start("m") < e for s, e in taken):
            continue
        name, pre = m.group("m"), (m.group("pre") or "").strip()
        if name in _AMBIGUOUS_MONTHS and not pre and not m.group("y"):
            continue
        month = _MONTHS[name]
        year = _month_year(r, month, m.group("y"), pre)
        first = date(year, month, 1)
        last = date(year, month, calendar.monthrange(year, month)[1])
        if pre in ("early", "beginning of", "start of", "the start of", "the beginning of"):
            last = date(year, month, 10)
        elif pre in ("late", "end of", "the end of"):
            first = date(year, month, 20)
        elif pre == "mid":
            first, last = date(year, month, 10), date(year, month, 20)
        if first > r.today:
            continue
        r.add(m, *r.span(first, min(last, r.today)))


def _rule_year(r: _Resolver) -> None:
    for m in _YEAR.finditer(r.low):
        year = int(m.group("y"))
        if year > r.today.year:
            continue
        lo, hi = r.span(date(year, 1, 1), min(date(year, 12, 31), r.today))
        r.add(m, lo, r.anchor if m.group("pre").startswith("since") else hi)


def _rule_numeric(r: _Resolver) -> None:
    for m in _NUMERIC.finditer(r.low):
        if not m.group("pre") and not m.group("y"):
            continue  # "1/2 a pill", "150/95": only "on 1/2" or a full date is a date
        try:
            month, day = int(m.group("m")), int(m.group("d"))
            y = m.group("y")
            year = (2000 + int(y) if len(y) == 2 else int(y)) if y else _month_year(r, month, None)
            d = date(year, month, day)
        except ValueError:
            continue
        if d > r.today:
            continue
        r.add(m, *r.day(d))
    for m in _ISO.finditer(r.low):
        try:
            d = date(int(m.group("y")), int(m.group("m")), int(m.group("d")))
        except ValueError:
            continue
        r.add(m, *r.day(d))


def _rule_holiday(r: _Resolver) -> None:
    for m in _HOLIDAY.finditer(r.low):
        name = m.group("hol")
        d = _holiday(name, r.today.year)
        if d is None:
            continue
        if d > r.today:
            d = _holiday(name, r.today.year - 1)
        if d is None:
            continue
        r.add(m, *r.day(d))


def _rule_ordinal(r: _Resolver) -> None:
    """"on the 12th": this month if that day has come, else last month."""
    for m in _ORDINAL_DAY.finditer(r.low):
        day = int(m.group("d"))
        if not 1 <= day <= 31:
            continue
        month_start = r.today.replace(day=1)
        if day > r.today.day:
            month_start = _add_months(month_start, -1)
        try:
            d = month_start.replace(day=day)
        except ValueError:
            continue
        r.add(m, *r.day(d))
    for m in _HOLIDAYS_SPAN.finditer(r.low):
        year = r.today.year if r.today >= date(r.today.year, 12, 20) else r.today.year - 1
        start, end = date(year, 12, 20), date(year + 1, 1, 2)
        r.add(m, *r.span(start, min(end, r.today)))


def _rule_season(r: _Resolver) -> None:
    for m in _SEASON.finditer(r.low):
        pre, s = m.group("pre"), m.group("s")
        first_m, last_m = _SEASONS[s]
        year = r.today.year
        if s == "winter":
            start = date(year - (1 if r.today.month < 12 else 0), 12, 1)
            if pre == "last":
                start = date(start.year - 1, 12, 1)
            end = date(start.year + 1, 2, calendar.monthrange(start.year + 1, 2)[1])
        else:
            start = date(year, first_m, 1)
            if start > r.today or pre == "last":
                start = date(year - 1, first_m, 1)
            end = date(start.year, last_m, calendar.monthrange(start.year, last_m)[1])
        if start > r.today:
            continue
        r.add(m, *r.span(start, min(end, r.today)))


RULES: list[Callable[[_Resolver], None]] = [
    _rule_ago, _rule_duration, _rule_simple, _rule_weekday, _rule_month, _rule_year, _rule_numeric,
    _rule_holiday, _rule_season, _rule_ordinal, _rule_bare,
]

_SINCE = re.compile(r"(?<![a-z])(since|ever since|starting|from)\s+(?:(?:we|i|he|she|they)\s+[a-z']+\s+(?:back\s+|home\s+)?)?$")


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text).replace("\u2019", "'")


def find_all(text: str, anchor: datetime) -> list[EventTime]:
    """Every expression in the text, in order of appearance (overlaps resolved: earliest, then longest)."""
    if not isinstance(text, str) or not isinstance(anchor, datetime):
        return []
    low = _fold(text[:5000])
    r = _Resolver(low, anchor)
    try:
        r.run()
    except (ValueError, OverflowError):  # a pathological date never breaks extraction
        return []
    r.found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    out: list[EventTime] = []
    last_end = -1
    for f in r.found:
        if f.start < last_end:
            continue
        start, lo, hi = f.start, f.lo, f.hi
        prefix = low[max(0, f.start - 30) : f.start]
        since = _SINCE.search(prefix)
        if since and "ago" not in low[f.start : f.end]:
            start = f.start - (len(prefix) - since.start())
            hi = anchor
        out.append(EventTime(text=text[start : f.end], start=lo, end=hi))
        last_end = f.end
    return out


def resolve(text: str, anchor: datetime) -> EventTime | None:
    """The first time expression in `text`, resolved against `anchor`; None when there is none."""
    found = find_all(text, anchor)
    return found[0] if found else None
