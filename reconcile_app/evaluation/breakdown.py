"""Where the false alarms come from, in counts only: false discrepancies and trap violations grouped by what the
findings carry (category, kind, severity, safety flag, how the finding was raised, the rule's family) and, for traps,
by a coarse phenomenon read from the label's reason. Pure functions over `scoring.Scores`.

Counts only, never text, quotes or ids: this is what `bench/sealed_eval.py --validation --breakdown` prints for a
split nobody who changes an engine may read, so that the largest families of false alarms can be attacked without
reading a transcript.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from reconcile_app.reconciliation.types import rule_family as _rule_family

from .scoring import Scores

# How a finding reached the queue (reconciliation/engines/judge.py): the judge raised a turn the rules saw no
# discrepancy in; the safety floor kept a discrepancy the judge scored under its threshold; or a rules discrepancy
# the judge let through (or the rules alone, where no judge is shipped).
ORIGINS = ("judge-raise", "safety-floor", "rules")


def origin_of(rule: str, gate_notes: Iterable[str] = ()) -> str:
    if rule.startswith("judge-raise:"):
        return "judge-raise"
    if any("safety floor" in note for note in gate_notes):
        return "safety-floor"
    return "rules"


def rule_family(rule: str) -> str:
    """The rule's family (reconciliation.types.rule_family) without the judge's prefix: "med-dose-mismatch" ->
    "med-dose", "judge-raise:condition-mention" -> "condition-mention", "redflag-melena+reread" -> "redflag-melena"."""
    return _rule_family(rule.split(":", 1)[1] if rule.startswith("judge-") and ":" in rule else rule)


def learned_change(gate_notes: Iterable[str]) -> str:
    """Which outcome model changed the rules' verdict (kind, safety flag, severity), "-" when none."""
    changed = []
    for note in gate_notes:
        if note.startswith("kind ") and "(learned" in note:
            changed.append("kind")
        elif note.startswith("safety-critical at"):
            changed.append("safety")
        elif note.startswith("severity ") and "(learned" in note:
            changed.append("severity")
    return "+".join(sorted(set(changed))) or "-"


# A trap's reason is free text; these words sort it into the phenomena the authors were dealt (briefs: another
# person's health, negation, hypotheticals and plans, retold history, agreement with the record, hearsay and media,
# foods and herbs, figures of speech). The first bucket whose words occur wins; "other" otherwise.
_PHENOMENA: Sequence[tuple[str, re.Pattern[str]]] = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
    ("hearsay-media", r"\b(?:tv|television|news|article|read|heard|podcast|online|internet|ad|advert\w*|commercial|social media|"
                      r"forum|video|magazine|rumou?r|hearsay|media)\b"),
    ("other-person", r"\b(?:mother|mom|mum|father|dad|husband|wife|son|daughter|sister|brother|friend|neighbou?r|coworker|"
                     r"colleague|partner|spouse|aunt|uncle|cousin|grand\w+|kid|child|baby|dog|cat|pet|someone|somebody|"
                     r"another person|other person|family|relative|roommate|boss|niece|nephew|in-law)\b"),
    ("hypothetical-plan", r"\b(?:hypothetical\w*|if|would|might|plan\w*|consider\w*|thinking|asks?|asked|question|wonder\w*|"
                          r"future|maybe|intend\w*|will|going to|worr\w+|fear\w*)\b"),
    ("negation", r"\b(?:negat\w*|den(?:y|ies|ied)|no|not|never|without|none|absent)\b"),
    ("retold-past", r"\b(?:past|history|historical|years? ago|ago|childhood|former\w*|previous\w*|resolved|back when|"
                    r"long ago|retold|already in the record|decades?)\b"),
    ("agrees-with-record", r"\b(?:agree\w*|as prescribed|matches|consistent|record|listed|documented|charted|already|"
                           r"on file|known)\b"),
    ("food-herb", r"\b(?:food|diet\w*|tea|herb\w*|juice|fruit|vegetable\w*|spice|supplement\w*|vitamin\w*|snack\w*|meal\w*)\b"),
    ("figure-of-speech", r"\b(?:hyperbole|figure of speech|figurative|idiom\w*|joke\w*|joking|exaggerat\w*|metaphor\w*|"
                         r"sarcas\w+|expression)\b"),
))


def trap_phenomenon(why: str) -> str:
    for name, pattern in _PHENOMENA:
        if pattern.search(why or ""):
            return name
    return "other"


def _table(rows: Iterable[tuple[str, ...]]) -> list[tuple[tuple[str, ...], int]]:
    return sorted(Counter(rows).items(), key=lambda kv: (-kv[1], kv[0]))


FALSE_KEYS = ("category", "kind", "severity", "safety", "origin", "family", "learned")
TRAP_KEYS = ("phenomenon", "category", "kind", "origin", "family")


def false_rows(scores: Scores) -> list[dict[str, str]]:
    return [{
        "category": str(f.get("category") or "-"), "kind": str(f.get("kind") or "-"), "severity": str(f.get("severity") or "-"),
        "safety": "safety" if f.get("safety_critical") else "-", "origin": str(f.get("origin") or "-"),
        "family": rule_family(str(f.get("rule") or "-")), "learned": str(f.get("learned") or "-"),
    } for f in scores.false_discrepancies]


def trap_rows(scores: Scores) -> list[dict[str, str]]:
    """One row per trap taken, described by its most serious discrepancy on the trap's turns."""
    rows = []
    for t in scores.trap_violations:
        hits = t.get("hits") or [{}]
        top = max(hits, key=lambda h: (h.get("kind") == "contradiction", bool(h.get("safety_critical"))))
        rows.append({"phenomenon": trap_phenomenon(t.get("why", "")), "category": str(top.get("category") or "-"),
                     "kind": str(top.get("kind") or "-"), "origin": str(top.get("origin") or "-"),
                     "family": rule_family(str(top.get("rule") or "-"))})
    return rows


KIND_KEYS = ("category", "labelled", "found")


def kind_rows(scores: Scores) -> list[dict[str, str]]:
    """One row per scenario: its category and labelled kind, the kind found ("missed" where the session has no
    discrepancy), and how the finding that speaks for the session (scoring._top) was raised."""
    rows = []
    for s in scores.scenarios:
        speaker = s.speaker if s.detected else {}
        rows.append({"category": s.category or "-", "labelled": s.kind or "-", "found": s.kind_found if s.detected else "missed",
                     "origin": str(speaker.get("origin") or "-"), "family": rule_family(str(speaker.get("rule") or "-")),
                     "learned": str(speaker.get("learned") or "-")})
    return rows


def breakdown(scores: Scores) -> dict[str, Any]:
    """Counts only: each dimension alone, then (category, kind, severity, safety, origin) and (origin, family) together;
    for traps, each dimension alone and (phenomenon, origin, family); for kind accuracy, (category, labelled, found)
    and the wrong kinds by how the finding that speaks for the session was raised."""
    false, traps, kinds = false_rows(scores), trap_rows(scores), kind_rows(scores)

    def counts(rows: list[dict[str, str]], keys: Sequence[str]) -> list[list[Any]]:
        return [[*key, n] for key, n in _table(tuple(r[k] for k in keys) for r in rows)]

    return {
        "false_discrepancies": len(false), "plain_sessions": scores.plain_sessions,
        "false_by": {k: counts(false, (k,)) for k in FALSE_KEYS},
        "false_by_verdict": counts(false, ("category", "kind", "severity", "safety", "origin")),
        "false_by_rule": counts(false, ("origin", "family")),
        "trap_violations": len(traps), "traps": scores.traps,
        "traps_by": {k: counts(traps, (k,)) for k in TRAP_KEYS},
        "traps_by_rule": counts(traps, ("phenomenon", "origin", "family")),
        # kind accuracy: labelled against found per category, then the wrong kinds by how their speaker was raised
        "kind_confusion": counts(kinds, KIND_KEYS),
        "kind_wrong_by": counts([r for r in kinds if r["found"] not in (r["labelled"], "missed")],
                                ("labelled", "found", "origin", "learned", "family")),
    }


def _group(row: list[Any]) -> str:
    """A counted row's key as one string ("medication/gap/-")."""
    return "/".join(map(str, row[:-1]))


def _lines(rows: Iterable[list[Any]]) -> list[str]:
    return [f"    {_group(r):60s} {r[-1]}" for r in rows]


def _by(rows_by_key: dict[str, list[list[Any]]]) -> list[str]:
    return [f"  by {key}: " + ", ".join(f"{_group(r)} {r[-1]}" for r in rows) for key, rows in rows_by_key.items()]


def breakdown_report(b: dict[str, Any]) -> str:
    out = [f"False discrepancies: {b['false_discrepancies']} over {b['plain_sessions']} plain sessions (counts only)"]
    out += _by(b["false_by"])
    out += ["  by category/kind/severity/safety/origin:", *_lines(b["false_by_verdict"])]
    out += ["  by origin/rule family:", *_lines(b["false_by_rule"])]
    out.append(f"Traps taken: {b['trap_violations']} of {b['traps']} (counts only)")
    out += _by(b["traps_by"])
    out += ["  by phenomenon/origin/rule family:", *_lines(b["traps_by_rule"])]
    if "kind_confusion" in b:
        out.append("Kind: category/labelled/found (counts only; found is the kind of the finding that speaks for the session)")
        out += _lines(sorted(b["kind_confusion"], key=lambda r: r[:-1]))
        out.append("  wrong kinds by labelled/found/origin/learned/rule family of the finding that speaks:")
        out += _lines(b["kind_wrong_by"])
    return "\n".join(out)
