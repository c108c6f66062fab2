"""Transcript parsers and writers (pure functions): coaching-transcript/v1 JSON, CSV and plain text.

Every parser returns a `ParsedTranscript` or raises `ValidationFailed` whose `errors` name the place
(session, turn, line) and the problem; nothing else escapes, whatever the input (fuzzed in tests).
Text is kept verbatim: HTML, scripts and prompt-injection phrases are data, escaped on display.

CSV format
----------
UTF-8, a header row naming the columns ``patient, session, timestamp, speaker, text`` (any order,
case-insensitive) and optionally ``turn`` (the turn id; ``<session>-tNN`` when absent). One row per
turn; a session's rows are contiguous and in time order; every row names the same patient. A session
starts at its first turn's timestamp.

Plain-text format
-----------------
::

    Patient reference: Patient/pt-123          (optional, before the first session; or system|value)
    # a comment line (only before the first session)

    === Session s01 2026-01-05 18:02 -05:00 ===   (id optional; seconds and offset optional)
    [18:02] Coach: Hi Roz, how was the week?     ([HH:MM], [HH:MM:SS] or a full ISO time; optional)
    [18:04:10] Patient: Fine. I walked daily.
      A continuation line starts with two spaces or a tab (removed); it joins the turn with a newline.
    Daughter: She forgot her pills twice.       (any other label: speaker "other", label kept)

* A session header without an id gets one from its start time (``20260105-1802``), stable across
  longer exports of the same conversation. Times without an offset are read in the caller's default
  time zone (UTC unless given). Turn ids are ``<session>-tNN`` in file order.
* A turn without a time inherits the previous turn's time (the session start for the first turn).
* Blank lines are ignored; any other line that is not a header, a turn or a continuation is an error.
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Any

from reconcile_app.core.exceptions import ValidationFailed

FORMAT_JSON = "coaching-transcript/v1"
FORMAT_CSV = "csv"
FORMAT_TEXT = "text"

MAX_ERRORS = 50  # enough to fix a file; more would bury the first problem
MAX_ID = 100
MAX_LABEL = 60
MAX_REF = 200
CSV_COLUMNS = ("patient", "session", "timestamp", "speaker", "text")
CSV_OPTIONAL = ("turn",)
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")


@dataclass(frozen=True)
class ParsedTurn:
    id: str
    speaker: str  # "patient", "coach" or "other"
    speaker_label: str  # as written, for "other" speakers only
    at: datetime
    text: str


@dataclass(frozen=True)
class ParsedSession:
    id: str
    started_at: datetime
    turns: tuple[ParsedTurn, ...]


@dataclass(frozen=True)
class ParsedTranscript:
    format: str
    patient: str  # "Patient/<id>", "system|value" or "" (match later, or hold)
    sessions: tuple[ParsedSession, ...]


class _Errors:
    """Collects precise errors; raises once with all of them (capped)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        if len(self.items) < MAX_ERRORS:
            self.items.append(message)

    def raise_if_any(self, summary: str) -> None:
        if self.items:
            raise ValidationFailed(summary, errors=list(self.items))


def speaker_normalize(value: str) -> tuple[str, str]:
    """("coach"|"patient", "") for the two roles, else ("other", label as written)."""
    folded = value.strip().casefold()
    if folded in ("coach", "patient"):
        return folded, ""
    return "other", value.strip()


def lone_surrogate(value: str) -> int | None:
    """Index of the first lone surrogate (a code point UTF-8 cannot encode, which JSON's \\uD800
    escapes produce), or None. No database column can store one."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def surrogate_error(value: str, where: str) -> str | None:
    """The precise error for a text with a lone surrogate, or None."""
    index = lone_surrogate(value)
    if index is None:
        return None
    return f"{where}: invalid Unicode at character {index + 1} (lone surrogate U+{ord(value[index]):04X}); export the file as UTF-8"


def _check_text(value: str, where: str, errors: _Errors) -> None:
    if not value.strip():
        errors.add(f"{where}: text is empty")
    if "\x00" in value:
        errors.add(f"{where}: text contains a NUL character")


def _check_id(value: Any, what: str, where: str, errors: _Errors) -> str:
    if not isinstance(value, str) or not value:
        errors.add(f"{where}: {what} is missing")
        return ""
    if len(value) > MAX_ID or not _ID_RE.match(value):
        errors.add(f"{where}: {what} {value[:40]!r} must be 1-{MAX_ID} letters, digits or . _ : -")
        return ""
    return value


def _check_label(value: str, where: str, errors: _Errors) -> None:
    if not value.strip():
        errors.add(f"{where}: speaker is missing")
    elif len(value) > MAX_LABEL or any(c in value for c in "\x00\n\r"):
        errors.add(f"{where}: speaker label must be one line of at most {MAX_LABEL} characters")


def parse_timestamp(value: Any) -> datetime:
    """An ISO 8601 time with a UTC offset; ValueError otherwise."""
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError("not a timestamp")
    parsed = datetime.fromisoformat(value.strip())
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError("timestamp has no UTC offset")
    return parsed


def _time_or_error(value: Any, where: str, errors: _Errors) -> datetime | None:
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError, OverflowError) as exc:
        shown = value[:40] if isinstance(value, str) else type(value).__name__
        reason = str(exc) if "offset" in str(exc) else "is not an ISO 8601 time with an offset"
        errors.add(f"{where}: {shown!r} {reason}")
        return None


def _check_patient_ref(value: Any, where: str, errors: _Errors) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > MAX_REF or not value.strip() or any(c in value for c in "\x00\n\r\t"):
        errors.add(f"{where}: patient must be 'Patient/<id>' or 'system|value' (one line, at most {MAX_REF} characters)")
        return ""
    value = value.strip()
    if value.startswith("Patient/"):
        if not re.fullmatch(r"Patient/[A-Za-z0-9\-.]{1,64}", value):
            errors.add(f"{where}: {value[:60]!r} is not a valid Patient reference")
            return ""
    elif "|" not in value:
        errors.add(f"{where}: {value[:60]!r} is neither 'Patient/<id>' nor 'system|value'")
        return ""
    return value


def _validate_order(sessions: list[ParsedSession], errors: _Errors, lines: dict[str, int] | None = None) -> None:
    """Unique ids across the file; turns in time order inside a session."""
    seen_sessions: set[str] = set()
    seen_turns: set[str] = set()
    for session in sessions:
        if session.id in seen_sessions:
            errors.add(f"session {session.id}: duplicate session id")
        seen_sessions.add(session.id)
        if not session.turns:
            errors.add(f"session {session.id}: has no turns")
        previous: datetime | None = None
        for turn in session.turns:
            where = f"session {session.id}, turn {turn.id}" + (f" (line {lines[turn.id]})" if lines and turn.id in lines else "")
            if turn.id in seen_turns:
                errors.add(f"{where}: duplicate turn id")
            seen_turns.add(turn.id)
            if previous is not None and turn.at < previous:
                errors.add(f"{where}: time {turn.at.isoformat()} is earlier than the turn before it")
            previous = turn.at


# --- JSON -------------------------------------------------------------------------------------


def _surrogates(node: Any, path: str, errors: _Errors) -> None:
    """Every string of the document, keys included, checked for lone surrogates (JSON's `\\ud800`
    escapes decode to them; CSV and text are decoded from UTF-8 and cannot hold one). Named by path."""
    stack: list[tuple[Any, str]] = [(node, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            problem = surrogate_error(item, where or "document")
            if problem:
                errors.add(problem)
        elif isinstance(item, dict):
            for key, value in item.items():
                here = f"{where}.{key}" if where else str(key)
                problem = surrogate_error(key, f"{where or 'document'}: a key")
                if problem:
                    errors.add(problem)
                    here = f"{where}.<invalid key>" if where else "<invalid key>"
                stack.append((value, here))
        elif isinstance(item, list):
            stack.extend((value, f"{where}[{i}]") for i, value in reversed(list(enumerate(item))))


def parse_json(text: str) -> ParsedTranscript:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed("not valid JSON", errors=[f"line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from None
    except (RecursionError, ValueError) as exc:  # absurd nesting, over-long integers
        raise ValidationFailed("not valid JSON", errors=[f"document cannot be read: {exc.__class__.__name__}"]) from None
    errors = _Errors()
    _surrogates(doc, "", errors)
    errors.raise_if_any("the transcript contains invalid Unicode")
    if not isinstance(doc, dict):
        raise ValidationFailed("not a transcript", errors=["the document must be a JSON object"])
    if doc.get("format") != FORMAT_JSON:
        errors.add(f"format must be {FORMAT_JSON!r}")
    patient = _check_patient_ref(doc.get("patient"), "patient", errors)
    raw_sessions = doc.get("sessions")
    if not isinstance(raw_sessions, list) or not raw_sessions:
        errors.add("sessions must be a non-empty list")
        raw_sessions = []
    sessions: list[ParsedSession] = []
    for si, raw in enumerate(raw_sessions, start=1):
        if not isinstance(raw, dict):
            errors.add(f"session #{si}: must be an object")
            continue
        sid = _check_id(raw.get("id"), "session id", f"session #{si}", errors)
        swhere = f"session {sid or '#' + str(si)}"
        started = _time_or_error(raw.get("started_at"), f"{swhere}: started_at", errors)
        raw_turns = raw.get("turns")
        if not isinstance(raw_turns, list) or not raw_turns:
            errors.add(f"{swhere}: turns must be a non-empty list")
            raw_turns = []
        turns: list[ParsedTurn] = []
        for ti, rt in enumerate(raw_turns, start=1):
            if not isinstance(rt, dict):
                errors.add(f"{swhere}, turn #{ti}: must be an object")
                continue
            tid = _check_id(rt.get("id"), "turn id", f"{swhere}, turn #{ti}", errors)
            twhere = f"{swhere}, turn {tid or '#' + str(ti)}"
            speaker_raw = rt.get("speaker")
            if not isinstance(speaker_raw, str):
                errors.add(f"{twhere}: speaker must be a string")
                speaker_raw = ""
            else:
                _check_label(speaker_raw, twhere, errors)
            at = _time_or_error(rt.get("at"), f"{twhere}: at", errors)
            body = rt.get("text")
            if not isinstance(body, str):
                errors.add(f"{twhere}: text must be a string")
                body = ""
            else:
                _check_text(body, twhere, errors)
            speaker, label = speaker_normalize(speaker_raw)
            if tid and at is not None:
                turns.append(ParsedTurn(id=tid, speaker=speaker, speaker_label=label, at=at, text=body))
        if sid and started is not None:
            sessions.append(ParsedSession(id=sid, started_at=started, turns=tuple(turns)))
    _validate_order(sessions, errors)
    errors.raise_if_any("the transcript has errors")
    return ParsedTranscript(format=FORMAT_JSON, patient=patient, sessions=tuple(sessions))


def format_json(transcript: ParsedTranscript) -> str:
    doc = {
        "format": FORMAT_JSON,
        "patient": transcript.patient,
        "sessions": [
            {
                "id": s.id,
                "started_at": s.started_at.isoformat(),
                "turns": [
                    {"id": t.id, "speaker": t.speaker_label if t.speaker == "other" else t.speaker, "at": t.at.isoformat(), "text": t.text}
                    for t in s.turns
                ],
            }
            for s in transcript.sessions
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=2)


# --- CSV --------------------------------------------------------------------------------------


def parse_csv(text: str) -> ParsedTranscript:
    errors = _Errors()
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ValidationFailed("not valid CSV", errors=[f"line 1: {exc}"]) from None
    if not header:
        raise ValidationFailed("not valid CSV", errors=["line 1: the header row is missing"])
    names = [h.strip().lstrip("\ufeff").casefold() for h in header]
    missing = [c for c in CSV_COLUMNS if c not in names]
    unknown = [h for h in names if h not in CSV_COLUMNS + CSV_OPTIONAL]
    if missing or unknown or len(set(names)) != len(names):
        problems = []
        if missing:
            problems.append(f"line 1: header lacks column(s) {', '.join(missing)}")
        if unknown:
            problems.append(f"line 1: unknown column(s) {', '.join(repr(u[:30]) for u in unknown[:5])}")
        if len(set(names)) != len(names):
            problems.append("line 1: a column is named twice")
        raise ValidationFailed("the CSV header is not a transcript header", errors=problems)
    col = {name: i for i, name in enumerate(names)}
    patient = ""
    patient_line = 0
    order: list[str] = []
    by_session: dict[str, list[tuple[int, ParsedTurn | None, str]]] = {}
    lines: dict[str, int] = {}
    closed: set[str] = set()
    current = ""
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row) and len(row) <= 1:
                continue
            if len(row) != len(names):
                errors.add(f"line {line}: expected {len(names)} fields, found {len(row)}")
                continue
            where = f"line {line}"
            ref = _check_patient_ref(row[col["patient"]], f"{where}: patient", errors)
            if ref and not patient:  # an empty patient column is allowed: the upload names the patient
                patient, patient_line = ref, line
            elif ref and ref != patient:
                errors.add(f"{where}: patient {ref[:60]!r} differs from {patient[:60]!r} on line {patient_line}")
            sid = _check_id(row[col["session"]].strip(), "session id", where, errors)
            if not sid:
                continue
            if sid != current:
                if sid in closed or sid in by_session:
                    errors.add(f"{where}: rows of session {sid} are not contiguous")
                    continue
                if current:
                    closed.add(current)
                current = sid
                order.append(sid)
                by_session[sid] = []
            n = len(by_session[sid]) + 1
            raw_tid = row[col["turn"]].strip() if "turn" in col else f"{sid}-t{n:02d}"
            tid = _check_id(raw_tid, "turn id", f"session {sid}, {where}", errors)
            twhere = f"session {sid}, turn {tid or '#' + str(n)} (line {line})"
            speaker_raw = row[col["speaker"]]
            _check_label(speaker_raw, twhere, errors)
            at = _time_or_error(row[col["timestamp"]], f"{twhere}: timestamp", errors)
            body = row[col["text"]]
            _check_text(body, twhere, errors)
            speaker, label = speaker_normalize(speaker_raw)
            turn = ParsedTurn(id=tid, speaker=speaker, speaker_label=label, at=at, text=body) if tid and at else None
            by_session[sid].append((line, turn, tid))
            if tid:
                lines[tid] = line
    except csv.Error as exc:
        errors.add(f"line {reader.line_num}: {exc}")
    if not order and not errors.items:
        errors.add("the file has a header but no rows")
    sessions = []
    for sid in order:
        turns = tuple(t for _, t, _ in by_session[sid] if t is not None)
        if turns:
            sessions.append(ParsedSession(id=sid, started_at=turns[0].at, turns=turns))
    _validate_order(sessions, errors, lines)
    errors.raise_if_any("the CSV transcript has errors")
    return ParsedTranscript(format=FORMAT_CSV, patient=patient, sessions=tuple(sessions))


def format_csv(transcript: ParsedTranscript) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["patient", "session", "turn", "timestamp", "speaker", "text"])
    for s in transcript.sessions:
        for t in s.turns:
            writer.writerow([transcript.patient, s.id, t.id, t.at.isoformat(), t.speaker_label if t.speaker == "other" else t.speaker, t.text])
    return out.getvalue()


# --- plain text -------------------------------------------------------------------------------

_HEADER_RE = re.compile(
    r"^===\s*Session\s+(?:(?P<id>[A-Za-z0-9][A-Za-z0-9._:-]*)\s+)?"
    r"(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}(?::\d{2})?)\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?\s*===\s*$"
)
_TURN_RE = re.compile(r"^(?:\[(?P<ts>[^\]]{1,40})\]\s*)?(?P<label>[A-Za-z][A-Za-z0-9 .'()/-]{0,59}?)\s*: ?(?P<text>.*)$")
_PATIENT_RE = re.compile(r"^Patient reference:\s*(?P<ref>.*)$", re.IGNORECASE)
_CLOCK_RE = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2}))?$")


def _offset(value: str | None, default_tz: tzinfo) -> tzinfo:
    if not value:
        return default_tz
    if value == "Z":
        return timezone.utc
    sign = -1 if value[0] == "-" else 1
    digits = value[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_text(text: str, *, default_tz: tzinfo = timezone.utc) -> ParsedTranscript:
    errors = _Errors()
    patient = ""
    sessions: list[ParsedSession] = []
    lines: dict[str, int] = {}
    # Current session state: id, start, turns as mutable [id, speaker, label, at, [text lines]].
    sid = ""
    start: datetime | None = None
    zone: tzinfo = default_tz
    turns: list[list[Any]] = []
    in_session = False

    def close_session() -> None:
        if in_session and sid and start is not None:
            parsed = tuple(ParsedTurn(id=t[0], speaker=t[1], speaker_label=t[2], at=t[3], text="\n".join(t[4])) for t in turns)
            for t in parsed:
                _check_text(t.text, f"session {sid}, turn {t.id} (line {lines[t.id]})", errors)
            sessions.append(ParsedSession(id=sid, started_at=start, turns=parsed))

    for number, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line[:-1] if raw_line.endswith("\r") else raw_line
        if line.startswith("==="):
            close_session()
            in_session, turns, sid, start = True, [], "", None
            match = _HEADER_RE.match(line)
            if not match:
                errors.add(f"line {number}: session header must look like '=== Session [id] YYYY-MM-DD HH:MM[:SS] [±HH:MM] ==='")
                sid = f"line{number}"
                continue
            try:
                zone = _offset(match["tz"], default_tz)
                start = datetime.combine(date.fromisoformat(match["date"]), time.fromisoformat(match["time"]), tzinfo=zone)
            except ValueError:
                errors.add(f"line {number}: session header has an impossible date, time or offset")
                sid = f"line{number}"
                continue
            sid = match["id"] or start.strftime("%Y%m%d-%H%M%S" if start.second else "%Y%m%d-%H%M")
            continue
        if line.startswith(("  ", "\t")) and in_session and turns:
            turns[-1][4].append(line[1:] if line.startswith("\t") else line[2:])
            continue
        if not line.strip():
            continue
        if line.startswith(("  ", "\t")):
            errors.add(f"line {number}: continuation line outside a turn")
            continue
        if not in_session:
            pmatch = _PATIENT_RE.match(line)
            if pmatch:
                patient = _check_patient_ref(pmatch["ref"], f"line {number}: patient reference", errors) or patient
            elif not line.startswith("#"):
                errors.add(f"line {number}: expected 'Patient reference: ...', a '#' comment or a session header before the first session")
            continue
        match = _TURN_RE.match(line)
        if not match:
            errors.add(f"line {number}: expected 'Speaker: text' (continuation lines start with two spaces)")
            continue
        tid = f"{sid}-t{len(turns) + 1:02d}"
        at = turns[-1][3] if turns else start
        if match["ts"]:
            at = _turn_time(match["ts"].strip(), start, zone, number, errors) or at
        speaker, label = speaker_normalize(match["label"])
        lines[tid] = number
        if at is not None:
            turns.append([tid, speaker, label, at, [match["text"] or ""]])
    close_session()
    if not sessions and not errors.items:
        errors.add("no session header found ('=== Session YYYY-MM-DD HH:MM ===')")
    _validate_order(sessions, errors, lines)
    errors.raise_if_any("the text transcript has errors")
    return ParsedTranscript(format=FORMAT_TEXT, patient=patient, sessions=tuple(sessions))


def _turn_time(value: str, start: datetime | None, zone: tzinfo, number: int, errors: _Errors) -> datetime | None:
    clock = _CLOCK_RE.match(value)
    try:
        if clock and start is not None:
            return datetime.combine(start.date(), time(int(clock[1]), int(clock[2]), int(clock[3] or 0)), tzinfo=zone)
        if not clock:
            return parse_timestamp(value)
    except (ValueError, OverflowError):
        pass
    errors.add(f"line {number}: turn time {value[:40]!r} must be HH:MM, HH:MM:SS or an ISO 8601 time with an offset")
    return None


def format_text(transcript: ParsedTranscript) -> str:
    out: list[str] = []
    if transcript.patient:
        out.append(f"Patient reference: {transcript.patient}")
    for s in transcript.sessions:
        out.append("")
        offset = s.started_at.strftime("%z")
        out.append(f"=== Session {s.id} {s.started_at.strftime('%Y-%m-%d %H:%M:%S')} {offset[:3]}:{offset[3:5]} ===")
        for t in s.turns:
            label = t.speaker_label if t.speaker == "other" else t.speaker.capitalize()
            first, *rest = t.text.split("\n")
            out.append(f"[{t.at.isoformat()}] {label}: {first}")
            out.extend(f"  {r}" for r in rest)
    return "\n".join(out) + "\n"


# --- entry point ------------------------------------------------------------------------------


def decode_upload(raw: bytes, *, max_bytes: int) -> str:
    """UTF-8 only (a BOM is dropped); the size limit is checked before anything is decoded."""
    if len(raw) > max_bytes:
        raise ValidationFailed("the file is too large", errors=[f"the file is {len(raw)} bytes; the limit is {max_bytes}"])
    if not raw.strip():
        raise ValidationFailed("the file is empty", errors=["the file is empty"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValidationFailed("the file is not UTF-8", errors=[f"line {line}, byte {exc.start}: not valid UTF-8 (export the file as UTF-8)"]) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ValidationFailed("the file contains NUL bytes", errors=[f"line {line}: NUL byte (is this a binary or UTF-16 file?)"])
    return text.removeprefix("\ufeff")


def detect_format(text: str, filename: str = "") -> str:
    name = filename.lower()
    stripped = text.lstrip()
    if name.endswith(".json") or stripped.startswith(("{", "[")):
        return FORMAT_JSON
    first = stripped.split("\n", 1)[0].casefold()
    # A header naming most of the columns is CSV, so a header missing one gets the CSV error.
    if name.endswith(".csv") or ("," in first and sum(c in first for c in CSV_COLUMNS) >= 3):
        return FORMAT_CSV
    return FORMAT_TEXT


def check_limits(parsed: ParsedTranscript, *, max_sessions: int | None, max_turns: int | None) -> None:
    """At most `max_sessions` sessions per upload and `max_turns` turns per session (settings)."""
    errors = _Errors()
    if max_sessions is not None and len(parsed.sessions) > max_sessions:
        errors.add(f"the file has {len(parsed.sessions)} sessions; the limit is {max_sessions} per upload (split the export)")
    if max_turns is not None:
        for session in parsed.sessions:
            if len(session.turns) > max_turns:
                errors.add(f"session {session.id}: {len(session.turns)} turns; the limit is {max_turns} per session")
    errors.raise_if_any("the transcript is over the limits")


def parse_transcript(raw: bytes, *, filename: str = "", max_bytes: int, default_tz: tzinfo = timezone.utc,
                     max_sessions: int | None = None, max_turns: int | None = None) -> ParsedTranscript:
    """Parse any of the three formats; a ValidationFailed names the format it was read as
    (`extra["format"]`, empty when the bytes could not be read as text at all)."""
    text = decode_upload(raw, max_bytes=max_bytes)
    fmt = detect_format(text, filename)
    try:
        if fmt == FORMAT_JSON:
            parsed = parse_json(text)
        elif fmt == FORMAT_CSV:
            parsed = parse_csv(text)
        else:
            parsed = parse_text(text, default_tz=default_tz)
        check_limits(parsed, max_sessions=max_sessions, max_turns=max_turns)
        return parsed
    except ValidationFailed as exc:
        exc.extra["format"] = fmt
        raise


# --- collapsing repeated statements -----------------------------------------------------------

# Statements shorter than this (in words) are answers whose meaning depends on the question ("Yes.",
# "Twice a day."): they collapse only when the whole exchange repeats.
SHORT_STATEMENT_WORDS = 5


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def turns_collapse(turns: tuple[ParsedTurn, ...]) -> list[tuple[ParsedTurn, int]]:
    """The session's turns with repeated identical statements folded into their first occurrence,
    each kept turn with how often it was said. A turn repeats when its speaker already said the
    same words (case and spacing aside) in the session; a short statement only when the turn
    before it also repeats the turn before that earlier occurrence. So a sentence pasted 5,000
    times is extracted once, while "Yes." to two different questions stays twice."""
    kept: list[list[Any]] = []  # [turn, repeats]
    said: dict[tuple[str, str, str], int] = {}  # (speaker, words, context) -> index in kept
    previous = ""
    for turn in turns:
        words = _normal(turn.text)
        speaker = f"{turn.speaker}:{turn.speaker_label.casefold()}"
        short = len(words.split()) < SHORT_STATEMENT_WORDS
        key = (speaker, words, previous if short else "")
        if key in said:
            kept[said[key]][1] += 1
        else:
            said[key] = len(kept)
            kept.append([turn, 1])
        previous = f"{speaker}|{words}"
    return [(turn, repeats) for turn, repeats in kept]
