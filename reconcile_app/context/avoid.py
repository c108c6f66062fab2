"""What not to say or suggest, derived from the safety context through the reconciliation knowledge tables (no ORM).

Each line names the table row it comes from: an `interactions` row (something the patient takes, has or is,
against something a coach might suggest) or an `allergens` row (an active allergy and what cross-reacts with
it). An allergy the tables do not know still gets its line, resting on the record entry alone."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reconcile_app.fhir.clinical import ClinicalEntry
from reconcile_app.reconciliation.knowledge import Knowledge, load_knowledge
from reconcile_app.reconciliation.matching import RecordIndex
from reconcile_app.terminology.vocabulary import load_vocabulary
from reconcile_app.triage.summaries import short_display

from .safety import SafetyGroup

# The side of an interaction row a coach could suggest; conditions and states are what the patient has or is.
SUGGESTIBLE = ("class", "drug", "vaccine")
SEVERITY_RANK = {"high": 3, "medium": 2, "low": 1}
OLDER_ADULT_AGE = 65  # AGS Beers criteria apply from 65
EXAMPLES = 3


@dataclass(frozen=True)
class Holder:
    """Why the patient holds one side of a row: the safety line it comes from."""

    because: str
    refs: tuple[str, ...]


def _key(entry: ClinicalEntry) -> tuple[str, str]:
    return entry.resource_type, entry.id


@lru_cache(maxsize=256)
def _class_examples(class_id: str) -> tuple[str, ...]:
    vocab = load_vocabulary()
    out = []
    for drug in vocab.drugs.values():
        if any(c == class_id or class_id in vocab.ancestors(c) for c in drug.classes):
            out.append(drug.name)
        if len(out) == EXAMPLES:
            break
    return tuple(out)


def label_for(ref: str, kb: Knowledge) -> str:
    """"nsaid (e.g. ibuprofen, naproxen, meloxicam)", "warfarin", "live vaccines (e.g. ...)"."""
    kind, _, value = ref.partition(":")
    if kind == "class":
        known = kb.classes.get(value) or load_vocabulary().classes.get(value)
        label = known.label if known else value.replace("_", " ")
        examples = [e for e in _class_examples(value) if e != label]
        return f"{label} (e.g. {', '.join(examples)})" if examples else label
    if kind == "vaccine" and value == "live":
        examples = [v.terms[0] for v in kb.vaccines if v.live][:EXAMPLES]
        return f"live vaccines (e.g. {', '.join(examples)})" if examples else "live vaccines"
    return value.replace("_", " ")


def _holders(groups: dict[str, list[SafetyGroup]], index: RecordIndex, age: int | None) -> dict[str, list[Holder]]:
    """Row sides ("class:anticoagulant", "condition:ckd", "state:pregnancy") -> the safety lines that hold them."""
    meds = {_key(m.entry): m for m in index.meds}
    conditions = {_key(c.entry): c for c in index.conditions}
    held: dict[str, list[Holder]] = defaultdict(list)
    for group in groups.get("medications", []):
        keys: set[str] = set()
        for member in group.members:
            me = meds.get(_key(member))
            if me is not None:
                keys |= {f"class:{c}" for c in me.classes} | {f"drug:{n}" for n in me.names}
        holder = Holder(f"takes {short_display(group.item.display)}", tuple(group.refs))
        for key in sorted(keys):
            held[key].append(holder)
    for group in groups.get("conditions", []):
        concepts: set[str] = set()
        for member in group.members:
            ce = conditions.get(_key(member))
            if ce is not None:
                concepts |= ce.concepts
        holder = Holder(f"has {group.item.display}", tuple(group.refs))
        for concept in sorted(concepts):
            held[f"condition:{concept}"].append(holder)
        if "pregnancy" in concepts:
            held["state:pregnancy"].append(Holder("is pregnant", tuple(group.refs)))
    if age is not None and age >= OLDER_ADULT_AGE:
        patient_ref = (f"Patient/{index.record.patient.id}",) if index.record.patient.id else ()
        held["state:older_adult"].append(Holder(f"is {age} (an older adult)", patient_ref))
    return held


def _merge(holders: list[Holder]) -> Holder:
    becauses: list[str] = []
    refs: list[str] = []
    for h in holders:
        if h.because not in becauses:
            becauses.append(h.because)
        refs += [r for r in h.refs if r not in refs]
    return Holder("; ".join(becauses), tuple(refs))


def interaction_lines(groups: dict[str, list[SafetyGroup]], index: RecordIndex, *, age: int | None,
                      kb: Knowledge) -> list[dict[str, Any]]:
    held = _holders(groups, index, age)
    lines = []
    for row_no, row in enumerate(kb.interactions):
        for own, other in ((row.a, row.b), (row.b, row.a)):
            if other.partition(":")[0] not in SUGGESTIBLE or not held.get(own):
                continue
            holder = _merge(held[own])
            avoid = ("another " if row.a == row.b else "") + label_for(other, kb)  # "two anticoagulants": not the one taken
            lines.append({
                "text": f"Patient {holder.because}: do not suggest {avoid} — {row.why}.",
                "avoid": other, "because": holder.because, "why": row.why, "severity": row.severity,
                "safety_critical": row.safety, "rests_on": list(holder.refs),
                "source": {"table": "interactions", "row": row_no, "a": row.a, "b": row.b, "citation": row.source},
            })
            if row.a == row.b:
                break  # "another NSAID on an NSAID": one line, not the same line twice
    lines.sort(key=lambda line: (not line["safety_critical"], -SEVERITY_RANK.get(line["severity"], 0), line["source"]["row"]))
    return lines


def _allergy_detail(line: dict[str, Any]) -> str:
    parts = [", ".join(line.get("reactions") or [])]
    if line.get("criticality"):
        parts.append(f"criticality {line['criticality']}")
    text = "; ".join(p for p in parts if p)
    return f" ({text})" if text else ""


def allergy_lines(groups: dict[str, list[SafetyGroup]], allergy_data: list[dict[str, Any]], index: RecordIndex, *,
                  kb: Knowledge) -> list[dict[str, Any]]:
    """One line per allergen row an active allergy names (with what cross-reacts with it), else one resting on the
    record entry alone: an allergy the tables do not know is still an allergy."""
    entries = {_key(a.entry): a for a in index.allergies}
    rows = {a.id: (n, a) for n, a in enumerate(kb.allergens)}
    lines = []
    for group, data in zip(groups.get("allergies", []), allergy_data):
        matched = [entries[_key(m)] for m in group.members if _key(m) in entries]
        allergen_ids = sorted({a for ae in matched for a in ae.allergens})
        cross = sorted({c for ae in matched for c in ae.classes if c in kb.classes and kb.classes[c].cross_reactive})
        drugs = sorted({d for ae in matched for d in ae.drug_names})
        because = f"has a recorded allergy: {group.item.display}{_allergy_detail(data)}"
        severity = "medium" if data.get("criticality") == "low" else "high"
        base = {"because": because, "severity": severity, "safety_critical": True, "rests_on": list(group.refs)}
        for allergen_id in allergen_ids:
            row_no, allergen = rows[allergen_id]
            avoid = [allergen.terms[0]] + [label_for(f"class:{c}", kb) for c in allergen.classes if c in kb.classes]
            lines.append({**base, "text": f"Patient {because}: do not suggest {' or '.join(dict.fromkeys(avoid))}.",
                          "avoid": f"allergen:{allergen_id}", "why": "an active allergy in the record",
                          "source": {"table": "allergens", "row": row_no, "id": allergen_id, "citation": allergen.source}})
        if not allergen_ids:
            names = drugs + [label_for(f"class:{c}", kb) for c in cross] or [group.item.display]
            lines.append({**base, "text": f"Patient {because}: do not suggest {' or '.join(dict.fromkeys(names))} or anything that contains it.",
                          "avoid": "record:" + group.refs[0], "why": "an active allergy in the record",
                          "source": {"table": "record", "row": None, "reference": group.refs[0], "citation": "the patient's record"}})
    return lines


def avoid_lines(groups: dict[str, list[SafetyGroup]], allergy_data: list[dict[str, Any]], index: RecordIndex, *,
                age: int | None, kb: Knowledge | None = None) -> list[dict[str, Any]]:
    """Allergies first, then interaction rows, safety-critical and severe first."""
    kb = kb or load_knowledge()
    return allergy_lines(groups, allergy_data, index, kb=kb) + interaction_lines(groups, index, age=age, kb=kb)
