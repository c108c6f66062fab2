"""What a finding is, in one line, and the concept it is about: pure functions over plain data (no ORM)."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SEPARATOR = " · "
# A name longer than this is shortened at a word boundary, so one line stays one line.
NAME_CHARS = 60
SAID_CHARS = 110
# The rules and LLM reconcilers cap explanations at this many characters (see the report of
# issue 11); an explanation of exactly that length that ends mid-sentence was cut there.
ENGINE_EXPLANATION_CAP = 300


@dataclass(frozen=True)
class SaidFacts:
    """The memory behind a finding: its category, typed attributes and times."""

    category: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    content: str = ""
    subject: str = "patient"
    subject_relation: str = ""
    assertion: str = "affirmed"
    event_time_text: str = ""
    event_start: datetime | None = None
    mention_time: datetime | None = None


@dataclass(frozen=True)
class RecordFacts:
    """One cited resource as the snapshot holds it (found=False: cited but absent)."""

    resource_type: str
    id: str
    display: str = ""
    status: str = ""
    value: str = ""
    date: str = ""
    found: bool = True


# --- shortening without cutting a word --------------------------------------------------------


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary with an ellipsis, never inside a word."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    head = text[:cut] if cut > 0 else text.split(" ", 1)[0]
    return head.rstrip(",;:-–—(") + "…"


def complete_sentences(text: str, *, cap: int = ENGINE_EXPLANATION_CAP) -> tuple[str, bool]:
    """(text, was_cut): an explanation an engine cut at its length cap, ended at its last whole
    sentence. Only text of the cap's length is touched: a short explanation without a final full
    stop is an author's style, not a cut, and dropping its last clause would lose information."""
    at_cap = len(text) >= cap  # measured before tidying: a cut can leave a trailing space ("… diuretics and ")
    text = " ".join(text.split())
    if not at_cap or text.endswith((".", "!", "?", ")", "”", '"', "’")):
        return text, False
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", text)]
    if ends:
        return text[: ends[-1]], True
    return shorten(text, len(text) - 1), True


# --- concept ----------------------------------------------------------------------------------

# Symptoms and conditions share a concept: "winded" today and "shortness of breath" next week
# are the same thing for the reviewer.
CONCEPT_GROUP = {"symptom": "condition"}
CONCEPT_ATTRIBUTE = {
    "medication": "drug",
    "allergy": "substance",
    "condition": "name",
    "symptom": "name",
    "measurement": "kind",
    "procedure": "name",
    "immunization": "name",
    "care_activity": "name",
    "goal": "name",
    "preference": "name",
}


def _norm(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", " ", str(value or "").casefold()).strip()


def concept_key(*, category: str, attributes: Mapping[str, Any]) -> str:
    """A normalised key for "the same thing" (e.g. "medication:metoprolol"), or "" when the memory
    names nothing specific (lifestyle remarks, unnamed items): those are never merged."""
    attribute = CONCEPT_ATTRIBUTE.get(category)
    name = _norm(attributes.get(attribute)) if attribute else ""
    if not name or name == _norm(category):
        return ""
    return f"{CONCEPT_GROUP.get(category, category)}:{name}"[:120]


# --- the patient's side -----------------------------------------------------------------------

MEDICATION_ACTIONS = {
    "stopped": "stopped {x}",
    "started": "started {x}",
    "skipped": "skips doses of {x}",
    "changed_dose": "changed the dose of {x}",
    "took_once": "took {x}",
    "taking": "taking {x}",
    "resumed": "restarted {x}",
}
MEDICATION_NEGATED = {"stopped": "has not stopped {x}", "skipped": "does not skip {x}"}
DOSE_CHANGES = {
    "half": "takes half the dose of {x}",
    "double": "takes double the dose of {x}",
    "more": "takes more {x} than prescribed",
    "less": "takes less {x} than prescribed",
}
CONDITION_STATUS = {
    "new": "new {x}",
    "ongoing": "still has {x}",
    "worse": "{x} is worse",
    "better": "{x} is better",
    "resolved": "{x} has resolved",
    "diagnosed": "was diagnosed with {x}",
}
MEASUREMENTS = {
    "blood_pressure": "blood pressure", "glucose": "blood sugar", "a1c": "A1c", "inr": "INR", "weight": "weight",
    "heart_rate": "heart rate", "spo2": "oxygen saturation", "temperature": "temperature", "tobacco_use": "tobacco use",
}
UNITS = {"mm[Hg]": "mmHg", "[lb_av]": "lb", "kg": "kg", "%": "%", "mg/dL": "mg/dL", "/min": "/min", "Cel": "°C", "[degF]": "°F"}
QUALIFIERS = {"hypothetical": " (considering it)", "historical": " (in the past)", "uncertain": " (not sure)"}
WEEKDAYS_MONTHS = re.compile(
    r"^(mon|tues|wednes|thurs|fri|satur|sun)day$|^(january|february|march|april|may|june|july|august|september|october|"
    r"november|december)\b", re.IGNORECASE)
RELATIVE_START = ("since ", "last ", "this ", "in ", "on ", "for ", "over ", "the last", "yesterday", "today", "tonight",
                  "earlier", "recently", "a while", "until ", "before ", "after ", "around ", "about ")


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _age_words(days: int) -> str:
    if days < 14:
        return f"{days} day{'s' if days != 1 else ''} ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    if days < 730:
        return f"{days // 30} months ago"
    return f"{days // 365} years ago"


def when_said(facts: SaidFacts) -> str:
    """The event time as the patient put it, relative to when they said it ("10 days ago")."""
    text = " ".join(facts.event_time_text.split())
    low = text.casefold()
    if low.startswith("the last ") or low.startswith("the past "):
        return "in " + low
    if low.endswith(" ago") or low.startswith(RELATIVE_START):
        return text[:1].lower() + text[1:]
    if facts.event_start is not None and facts.mention_time is not None:
        days = (facts.mention_time - facts.event_start).days
        if days >= 1:
            return _age_words(days)
    if text and WEEKDAYS_MONTHS.match(low):
        return "on " + text[:1].upper() + text[1:]
    return f"(“{text}”)" if text else ""


def _medication(facts: SaidFacts) -> str:
    a = facts.attributes
    drug = str(a.get("drug") or a.get("drug_class") or "a medicine")
    action = str(a.get("action") or "")
    if a.get("dose_change") in DOSE_CHANGES:
        phrase = DOSE_CHANGES[str(a["dose_change"])].format(x=drug)
    elif facts.assertion == "negated":
        phrase = MEDICATION_NEGATED.get(action, "not taking {x}").format(x=drug)
    else:
        phrase = MEDICATION_ACTIONS.get(action, "taking {x}").format(x=drug)
    dose = a.get("frequency") or a.get("dose_text")  # "2 in the morning and 2 at night" says more than "2 in the morning"
    if dose and action in ("taking", "started", "changed_dose", "took_once"):
        phrase += f" {dose}"
    if a.get("source") == "otc":
        phrase += " (over the counter)"
    elif a.get("source") == "someone_else":
        phrase += " (someone else's)"
    return phrase


def _condition(facts: SaidFacts) -> str:
    a = facts.attributes
    name = str(a.get("name") or "a symptom")
    if facts.assertion == "negated":
        return f"no {name}"
    return CONDITION_STATUS.get(str(a.get("stated_status") or ""), "has {x}").format(x=name)


def _allergy(facts: SaidFacts) -> str:
    a = facts.attributes
    substance = str(a.get("substance") or "a substance")
    if facts.assertion == "negated":
        return f"not allergic to {substance}"
    if a.get("stated_status") == "resolved":
        return f"no longer allergic to {substance}"
    if a.get("reaction"):
        return f"{substance} caused {a['reaction']}"
    return f"allergic to {substance}"


def _measurement(facts: SaidFacts) -> str:
    a = facts.attributes
    label = MEASUREMENTS.get(str(a.get("kind") or ""), str(a.get("kind") or "a reading").replace("_", " "))
    if a.get("value") is None:
        return label
    value = _number(a["value"]) + (f"/{_number(a['value2'])}" if a.get("value2") is not None else "")
    unit = UNITS.get(str(a.get("unit") or ""), str(a.get("unit") or ""))
    where = " at home" if a.get("setting") == "home" else (" elsewhere" if a.get("setting") == "outside" else "")
    return f"{label} {value}{(' ' + unit) if unit else ''}{where}"


def _done(facts: SaidFacts) -> str:
    a = facts.attributes
    name = str(a.get("name") or facts.category)
    where = f" at {a['where']}" if a.get("where") else ""
    return (f"never had {name}" if facts.assertion == "negated" else f"had {name}") + where


def _activity(facts: SaidFacts) -> str:
    a = facts.attributes
    name = str(a.get("name") or "")
    action = str(a.get("action") or "")
    if action and name:
        return f"{'not ' if facts.assertion == 'negated' else ''}{action} {name}"
    if facts.category == "goal":
        return f"wants to {a.get('detail') or name}"
    if facts.category == "preference":
        return f"prefers {a.get('detail') or name}"
    return ""


def _quoted(facts: SaidFacts) -> str:
    text = facts.content.split(": ", 1)[1] if ": " in facts.content[:30] else facts.content
    return f"“{shorten(text, SAID_CHARS)}”"


def patient_says(facts: SaidFacts) -> str:
    """"Says stopped metoprolol 10 days ago": built from the typed attributes, never cut mid-word."""
    builders = {
        "medication": _medication, "condition": _condition, "symptom": _condition, "allergy": _allergy,
        "measurement": _measurement, "procedure": _done, "immunization": _done,
        "care_activity": _activity, "goal": _activity, "preference": _activity,
    }
    build = builders.get(facts.category)
    phrase = build(facts) if build is not None else ""
    if not phrase:
        phrase = _quoted(facts)  # already shortened inside its quotation marks
    else:
        when = when_said(facts) if facts.category != "measurement" else ""
        phrase = shorten(f"{phrase} {when}" if when else phrase, SAID_CHARS)
    phrase += QUALIFIERS.get(facts.assertion, "")
    if facts.subject != "patient":
        return f"About their {facts.subject_relation or 'someone else'}: {phrase}"
    return f"Says {phrase}"


# --- the record's side ------------------------------------------------------------------------

CATEGORY_TYPES = {
    "medication": ("MedicationRequest", "MedicationStatement"),
    "condition": ("Condition",),
    "allergy": ("AllergyIntolerance",),
    "procedure": ("Procedure",),
    "immunization": ("Immunization",),
    "observation": ("Observation",),
    "careplan": ("CarePlan",),
}
ABSENT = {
    "medication": "not on the medication list",
    "condition": "not on the problem list",
    "allergy": "not on the allergy list",
    "procedure": "no such procedure recorded",
    "immunization": "no such dose recorded",
    "observation": "no such reading recorded",
    "careplan": "not in the care plan",
}
# Dose forms and manufacturer prefixes that make RxNorm names long without telling a nurse more.
DOSE_FORMS = re.compile(r"\s+(Oral (Tablet|Capsule)|Extended Release Oral (Tablet|Capsule)|Delayed Release Oral (Tablet|Capsule)|"
                        r"Chewable Tablet|Oral Solution)$", re.IGNORECASE)
UNIT_WORDS = re.compile(r"\b(MG|ML|MCG|UNT)\b")
UNIT_LOWER = {"MG": "mg", "ML": "mL", "MCG": "mcg", "UNT": "units"}
SKIP_STATUS = {"Observation": {"final", "amended", "corrected", "preliminary"}}


def short_display(display: str) -> str:
    text = re.sub(r"^(NDA|ANDA|BLA)\d+\s+", "", " ".join(display.split()))
    text = DOSE_FORMS.sub("", text)
    text = UNIT_WORDS.sub(lambda m: UNIT_LOWER[m.group(1)], text)
    return shorten(text, NAME_CHARS)


def _describe(r: RecordFacts, *, last: bool = False) -> str:
    name = short_display(r.display) or f"{r.resource_type}/{r.id}"
    if not r.found:
        return f"{name} (no longer in the record)"
    parts = [("last " if last else "") + name]
    if r.value:
        parts.append(r.value)
    if r.status and r.status not in SKIP_STATUS.get(r.resource_type, set()):
        parts.append(r.status)
    text = " ".join(parts)
    if r.date and r.resource_type in ("Observation", "Procedure", "Immunization"):
        text += f" ({r.date[:10]})"
    return text


def _terms(facts: SaidFacts) -> list[str]:
    a = facts.attributes
    values = [a.get(k) for k in ("drug", "substance", "name", "term")]
    if facts.category == "measurement":
        values.append(MEASUREMENTS.get(str(a.get("kind") or "")))
    return [t for t in (_norm(v) for v in values) if len(t) >= 3]


def _about(facts: SaidFacts, kind: str, category: str, record: Sequence[RecordFacts]) -> list[RecordFacts]:
    """Cited entries that are about the memory's concept: an entry of the finding's category whose
    name contains the concept's name, or (for a contradiction) the record entry the memory names.
    A gap's named entry is context, not presence: a reaction to spironolactone is a gap in the
    allergy list even though the spironolactone prescription is cited."""
    types = CATEGORY_TYPES.get(category, ())
    ref = str(facts.attributes.get("record_ref") or "")
    terms = _terms(facts)
    return [
        r for r in record
        if (r.resource_type in types and (f"{r.resource_type}/{r.id}" == ref or any(t in _norm(r.display) for t in terms)))
        or (kind == "contradiction" and f"{r.resource_type}/{r.id}" == ref)
    ]


def record_says(*, kind: str, category: str, facts: SaidFacts, record: Sequence[RecordFacts]) -> str:
    """"record: metoprolol tartrate 25 mg active", or what the record lacks for a gap."""
    about = _about(facts, kind, category, record)
    if kind == "contradiction" and not about:
        about = list(record[:1])  # the engines cite the entry a contradiction is about first
    if about:
        last = category == "observation" and kind == "gap"
        return "record: " + "; ".join(_describe(r, last=last) for r in about[:2])
    text = "record: " + ABSENT.get(category, "no entry")
    related = [short_display(r.display) for r in record if r.display][:2]
    if related:
        text += " (relevant: " + ", ".join(related) + ")"
    return text


def finding_summary(*, kind: str, category: str, facts: SaidFacts, record: Sequence[RecordFacts]) -> str:
    """"Says stopped metoprolol 10 days ago · record: metoprolol tartrate 25 mg active"."""
    return patient_says(facts) + SEPARATOR + record_says(kind=kind, category=category, facts=facts, record=record)
