"""The pack as plain text for a prompt, within a token budget, safety first (no ORM)."""
from __future__ import annotations

import math
from typing import Any

from reconcile_app.core.exceptions import PermanentError

# Tokens are estimated, not counted: one per 3 characters over-counts English for the common BPE tokenizers
# (about 4 characters a token), so a text sized here fits the budget of any of them.
CHARS_PER_TOKEN = 3
OMITTED_RESERVE = 40  # tokens kept free for the line that says what the budget left out


class BudgetTooSmall(PermanentError):
    """The safety section alone does not fit: it is never cut, so the caller must give a larger budget."""

    def __init__(self, *, budget: int, needed: int) -> None:
        super().__init__(f"budget: {budget} tokens cannot hold the safety section; at least {needed} are needed")
        self.budget = budget
        self.needed = needed


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _line_tokens(line: str) -> int:
    return estimate_tokens(line + "\n")


def _date(value: str | None) -> str:
    return (value or "")[:10]


def _allergy(a: dict[str, Any]) -> str:
    details = []
    if a.get("reactions"):
        details.append("reaction: " + ", ".join(a["reactions"]))
    if a.get("criticality"):
        details.append(f"criticality {a['criticality']}")
    if a.get("verification"):
        details.append(a["verification"])
    return f"- {a['display']}{' — ' + '; '.join(details) if details else ''} [{a['reference']}]"


def _medication(m: dict[str, Any]) -> str:
    dosing = "; ".join(p for p in (m.get("dose"), m.get("frequency"), m.get("instructions")) if p)
    return f"- {m['display']}{' — ' + dosing if dosing else ''} [{m['reference']}]"


def _condition(c: dict[str, Any]) -> str:
    extra = ", ".join(p for p in (", ".join(c.get("categories") or []), c.get("verification")) if p)
    return f"- {c['display']}{' (' + extra + ')' if extra else ''} [{c['reference']}]"


def safety_lines(pack: dict[str, Any]) -> list[str]:
    """The header and the mandatory safety context: never cut by the budget."""
    record, safety = pack["record"], pack["safety"]
    lines = [f"CONTEXT PACK {pack['patient']['reference']} · as of {pack['as_of'] or 'unknown'} · version {pack['version']}"]
    if not record["available"]:
        lines += ["SAFETY CONTEXT UNAVAILABLE: no record has been pulled for this patient yet.",
                  "Do not assume the patient has no allergies, medications or conditions."]
        return lines
    who = ", ".join(p for p in (f"age {safety['age']}" if safety.get("age") is not None else "", safety.get("sex") or "") if p)
    lines.append(f"== SAFETY (record snapshot v{record['snapshot_version']}, {record['snapshot_at']}){': ' + who if who else ''} ==")
    lines.append("Allergies (active):")
    if safety["allergies"]:
        lines += [_allergy(a) for a in safety["allergies"]]
    else:
        lines.append("- No known allergies (recorded)." if safety["no_known_allergies"] else "- None recorded (not confirmed as none).")
    lines.append("Medications (active):")
    lines += [_medication(m) for m in safety["medications"]] or ["- None recorded."]
    lines.append("Conditions (active, every category):")
    lines += [_condition(c) for c in safety["conditions"]] or ["- None recorded."]
    if safety.get("unreadable"):
        refs = ", ".join(f"{u['resourceType']}/{u['id']}" for u in safety["unreadable"])
        lines.append(f"WARNING: the record holds entries that could not be read ({refs}); this list may be incomplete.")
    return lines


def _memory(m: dict[str, Any]) -> str:
    session = m["session"]["id"]
    return f"- {m['statement']} (said {_date(m['said_at'])}, session {session})"


def _avoid(line: dict[str, Any]) -> str:
    return f"- {line['text']} [{_row(line['source'])}]"


def optional_sections(pack: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(key, heading, lines) in the order they are kept when the budget runs short: open discrepancies (few, and
    what the agent most needs not to contradict), the safety-critical lines of what not to suggest, the other lines,
    the patient's memories, other people's facts."""
    critical = [line for line in pack["do_not_suggest"] if line["safety_critical"]]
    other = [line for line in pack["do_not_suggest"] if not line["safety_critical"]]
    memory_lines: list[str] = []
    for category, items in pack["memories"].items():
        memory_lines.append(f"{category}:")
        memory_lines += [_memory(m) for m in items]
    return [
        ("open_discrepancies", "== OPEN DISCREPANCIES (under review; do not settle them with the patient) ==",
         [f"- {d['text']}" for d in pack["open_discrepancies"]]),
        ("do_not_suggest", "== DO NOT SAY OR SUGGEST (safety-critical) ==", [_avoid(line) for line in critical]),
        ("also_avoid", "== ALSO AVOID SUGGESTING ==", [_avoid(line) for line in other]),
        ("memories", "== WHAT THE PATIENT TOLD US (current) ==", memory_lines),
        ("about_others", "== ABOUT OTHER PEOPLE (not the patient's own facts) ==",
         [f"- About their {m['about']}: {m['statement']} (said {_date(m['said_at'])}, session {m['session']['id']})"
          for m in pack["about_others"]]),
    ]


def _row(source: dict[str, Any]) -> str:
    if source.get("row") is None:
        return source.get("reference") or source.get("table", "")
    return f"{source['table']} row {source['row']}"


def render_text(pack: dict[str, Any], *, budget: int) -> str:
    """Safety in full, then each later section line by line until the budget is reached; what is left out is
    counted in a last line. Order is strict: once a line does not fit, no later line is taken either."""
    lines = safety_lines(pack)
    used = sum(_line_tokens(line) for line in lines)
    if used + OMITTED_RESERVE > budget:
        raise BudgetTooSmall(budget=budget, needed=used + OMITTED_RESERVE)
    left_out: dict[str, int] = {}
    full = False
    for key, heading, body in optional_sections(pack):
        if not body:
            continue
        if not full and used + _line_tokens(heading) + _line_tokens(body[0]) + OMITTED_RESERVE <= budget:
            lines.append(heading)
            used += _line_tokens(heading)
            taken = 0
            for line in body:
                if used + _line_tokens(line) + OMITTED_RESERVE > budget:
                    full = True
                    break
                lines.append(line)
                used += _line_tokens(line)
                taken += 1
            if taken < len(body):
                left_out[key] = len(body) - taken
        else:
            full = True
            left_out[key] = len(body)
    if left_out:
        counts = ", ".join(f"{n} {key.replace('_', ' ')}" for key, n in left_out.items())
        lines.append(f"[Left out to fit {budget} tokens: {counts} lines. Ask for a larger budget or the JSON pack.]")
    return "\n".join(lines) + "\n"
