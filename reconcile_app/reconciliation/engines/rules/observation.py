"""Measurement memories: home readings against the measurement table's thresholds, the record's own values and the
patient's earlier readings (a weight compared with the last clinic weight, a series of daily weights)."""
from __future__ import annotations

import re
from datetime import datetime

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, eval_rule, regex_text
from reconcile_app.reconciliation.types import SEVERITY_RANK

from .cues import FASTING, LAB_KINDS, PAST_EXPRESSION, WEIGHT_INTENT, WEIGHT_INTENT_DENIED, WEIGHT_LOSS_GOAL
from .verdict import AGREE, Cat, Context, GAP, NCR, Verdict, _attr, _days_apart, _with_attributes


_NUM = r"(\d{1,3}(?:\.\d+)?)"
LB_PER_KG = 2.20462
MAX_PLAUSIBLE_CHANGE = 0.3
RECORD_WEIGHT_DAYS = 365  # a clinic weight older than a year is no baseline for a change (AAFP: loss over 6-12 months)


class ObservationRules:
    """Measurement memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _measurement(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """In order: a tracked measure (or a lab named in the quote), denial, the worst threshold any reading crosses;
        a reading within range agrees with the record."""
        kind = _attr(m, "kind").lower()
        measure = self.kb.measures.get(kind)
        quote = regex_text(m.quote)
        if measure is None:
            lab = _lab_in_quote(quote, self.kb)
            if lab is not None:
                kind, value = lab
                measure = self.kb.measures[kind]
                m = _with_attributes(m, {"kind": kind, "value": value})
        if measure is None:
            flag = self._red_flag_verdict(m, ctx, quote)
            return flag or Verdict(NCR, Cat.OBSERVATION, "measure-untracked", explanation="Not a tracked clinical measurement.")
        if m.assertion in (Assertion.NEGATED,):
            return Verdict(NCR, Cat.OBSERVATION, "measure-negated")
        latest = ctx.idx.latest_observation(measure.loinc)
        turn = regex_text(ctx.around(m))
        if kind == "weight":
            readings = _weight_readings(m, quote, turn, latest, planned_loss=_weight_loss_planned(ctx))
        else:
            readings = _readings(m, kind, quote, turn, latest)
        worst = self._worst_rule(measure, readings, ctx)
        if m.assertion == Assertion.HISTORICAL and worst is None:
            return Verdict(NCR, Cat.OBSERVATION, "measure-historical")
        if worst is None:
            if not readings:
                return Verdict(NCR, Cat.OBSERVATION, "measure-no-value", explanation="No value to compare.")
            v = Verdict(AGREE, Cat.OBSERVATION, "measure-in-range", explanation=f"Reported {kind.replace('_', ' ')} is within the reference range.")
            return v.cite(latest)
        return self._reading_gap(m, ctx, measure, kind, worst, latest, quote)

    def _worst_rule(self, measure, readings: list[dict], ctx: Context) -> tuple[object, dict] | None:
        """The most severe threshold any reading crosses (the first matching rule of each reading, in table order)."""
        conditions = set(ctx.idx.active_concepts)
        sex = (getattr(getattr(ctx.idx.record, "patient", None), "sex", "") or "").lower()
        worst: tuple[int, object, dict] | None = None
        for values in readings:
            values = {**values, "sex": sex}  # sex-specific thresholds (haemoglobin)
            for rule in measure.rules:
                if eval_rule(rule.when, values, conditions):
                    rank = SEVERITY_RANK[rule.severity] * 2 + int(rule.safety)
                    if worst is None or rank > worst[0]:
                        worst = (rank, rule, values)
                    break
        return None if worst is None else (worst[1], worst[2])

    def _reading_gap(self, m: MemoryDraft, ctx: Context, measure, kind: str, worst: tuple[object, dict],
                     latest: ClinicalEntry | None, quote: str) -> Verdict:
        """A reading beyond a threshold: the gap, citing the record's last value, the related conditions and plan."""
        rule, values = worst
        related_conditions = self._conditions_with_related(ctx, set(measure.conditions))
        shown = _show(kind, values)
        v = Verdict(GAP, Cat.OBSERVATION, f"reading-{rule.id}", rule.severity, rule.safety,
                    f"Patient reports {kind.replace('_', ' ')} {shown}, {rule.text}" + (f"; last recorded {latest.detail} ({latest.date[:10]})." if latest and latest.detail else "."))
        v.cite(*related_conditions[:3])
        v.cite(latest)
        v.cite(*(ctx.idx.careplans_mentioning(measure.careplan_terms)[:1] or ctx.idx.careplans_addressing({e.id for e in related_conditions})[:1]))
        flag = self._red_flag_verdict(m, ctx, quote)
        if flag is not None:
            v.raise_to(flag.severity, flag.safety)
            v.cite(*flag.cites[:2])
        return v


def _lab_in_quote(quote: str, kb: Knowledge) -> tuple[str, float] | None:
    """A lab the extractor has no kind for ("my potassium was 5.8"): the named lab and the number right after it."""
    for kind in LAB_KINDS:
        measure = kb.measures.get(kind)
        if measure is None:
            continue
        for term in sorted(measure.terms, key=len, reverse=True):
            hit = re.search(rf"\b{re.escape(term)}\b(?:\s+(?:level|number|result|was|is|came back|at|of|went up to|dropped to|to|up|down|only)){{0,4}}\s*(\d+(?:\.\d+)?)", quote)
            if hit:
                return kind, float(hit.group(1))
    return None


def _num(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None


def _listed(m: MemoryDraft) -> list[float]:
    """The extracted value and every other reading the extractor listed with it."""
    values = [_num(v) for v in (m.attributes.get("values") or []) if _num(v) is not None]
    value = _num(m.attributes.get("value"))
    return [v for v in values if v is not None] or ([value] if value is not None else [])


def _readings(m: MemoryDraft, kind: str, quote: str, turn: str, latest: ClinicalEntry | None) -> list[dict]:
    """Every reading in the memory: the extracted values plus the others the patient listed in the same quote."""
    a = m.attributes
    value, value2, unit = _num(a.get("value")), _num(a.get("value2")), str(a.get("unit") or "").lower()
    if kind == "blood_pressure":
        pairs = [(float(s), float(d)) for s, d in re.findall(r"\b(\d{2,3})\s*(?:/|over)\s*(\d{2,3})\b", quote)]
        if value is not None:
            pairs.append((value, value2 or 0.0))
        return [{"value": s, "value2": d} for s, d in pairs if 50 <= s <= 300]
    if kind == "glucose":
        return _glucose_readings(m, quote, turn, unit)
    if kind == "temperature":
        if value is None:
            return []
        celsius = (value - 32) * 5 / 9 if value > 50 or "f" in unit else value
        return [{"value": value, "celsius": celsius}]
    if kind == "peak_flow":  # each reading as a percent of the personal best the patient states (the zones' yardstick)
        best = _num(a.get("baseline"))
        return [{"value": v, "percent_best": v / best * 100 if best else None} for v in _listed(m)]
    if kind in ("heart_rate", "viral_load", "spo2"):  # every reading listed: the lowest saturation decides
        return [{"value": v} for v in _listed(m)]
    return [{"value": value, "value2": value2}] if value is not None else []


def _glucose_readings(m: MemoryDraft, quote: str, turn: str, unit: str) -> list[dict]:
    """Glucose values (mmol/L converted), each marked fasting when the patient says they were taken fasting."""
    values = _listed(m)
    if "mmol" not in unit:
        values += [float(x) for x in re.findall(r"\b(\d{2,3})\b", quote) if 20 <= float(x) <= 700 and not re.search(rf"\b{x}\s*(?:%|lb|pounds|steps|min|mins|minutes|hours|days|years|mg\b(?!/))", quote)]
    fasting = bool(FASTING.search(turn))
    return [{"value": v * 18.0 if "mmol" in unit and v < 35 else v, "fasting": fasting} for v in dict.fromkeys(values)]


def _weight_readings(m: MemoryDraft, quote: str, turn: str, latest: ClinicalEntry | None, *, planned_loss: bool) -> list[dict]:
    """A weight change: stated as a change, or a weight compared with the patient's earlier value or the record's.

    A loss the patient only states ("I'm down 9 pounds") is intended unless they say it was not; a loss read from
    numbers is unintended unless they say it was meant or the record plans one (a weight goal, obesity).
    """
    a = m.attributes
    denied = bool(WEIGHT_INTENT_DENIED.search(turn))
    if a.get("change") is True or a.get("change") not in (None, False, True):
        change = _num(a.get("value")) if a.get("change") is True else _num(a.get("change"))
        if change is None:
            return []
        if str(a.get("unit") or "").lower().startswith("k"):
            change *= LB_PER_KG
        return [{"change_lb": change, "days": _days_in_words(turn, a), "intentional": not denied}]
    intentional = not denied and (bool(WEIGHT_INTENT.search(turn)) or planned_loss)
    value = _num(a.get("value"))
    if value is None:
        return [] if not (change := _change_in_words(quote)) else [{"change_lb": change, "days": _days_in_words(turn, a), "intentional": not denied}]
    to_lb = LB_PER_KG if str(a.get("unit") or "").lower().startswith("k") else 1.0
    current = value * to_lb
    baseline, days = _num(a.get("baseline")), _days_in_words(turn, a)
    if baseline is not None and not PAST_EXPRESSION.search(turn):
        before = baseline * to_lb
    else:
        recorded = _record_weight_lb(latest, m.mention_time)
        if recorded is None:
            return []
        before, days = recorded
    change = current - before
    if before <= 0 or abs(change) > MAX_PLAUSIBLE_CHANGE * before:
        return []  # a third of the body weight is not a change a scale reports: another number was read as a weight
    return [{"change_lb": change, "pct_change": 100.0 * change / before, "days": days, "intentional": intentional,
             "value": current}]


def _record_weight_lb(latest: ClinicalEntry | None, when: datetime) -> tuple[float, float] | None:
    """The record's last weight in pounds and its age in days, when it is recent enough to compare with."""
    if latest is None or not latest.quantities:
        return None
    q = latest.quantities[0]
    days = _days_apart(latest.date, when)
    if days is None or days > RECORD_WEIGHT_DAYS:
        return None
    unit = (q.unit or "").lower()
    return (q.value * LB_PER_KG if unit.startswith("k") else q.value), float(max(days, 1))


def _weight_loss_planned(ctx: Context) -> bool:
    """The record or the patient's own goals plan a weight loss: an active plan or earlier goal that speaks of losing
    weight, or active obesity."""
    if "obesity" in ctx.idx.active_concepts:
        return True
    plans = " ".join(text for entry, text in ctx.idx.careplans if entry.state == State.ACTIVE)
    goals = " ".join(h.quote for h in ctx.history if h.category in ("goal", "care_activity", "preference"))
    return bool(WEIGHT_LOSS_GOAL.search(regex_text(plans + " " + goals)))


def _change_in_words(quote: str) -> float | None:
    gained = re.search(r"(?:gain\w*|up|put on|heavier)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote) or re.search(
        _NUM + r"\s*(?:lb|lbs|pounds|kg)\s*(?:\w+\s*){0,3}(?:gain|heavier|up)", quote)
    lost = re.search(r"(?:lost|down|dropped)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote)
    hit, sign = (gained, 1.0) if gained else (lost, -1.0)
    if hit is None:
        return None
    change = sign * float(hit.group(1))
    return change * LB_PER_KG if "kg" in quote and "lb" not in quote and "pound" not in quote else change


def _days_in_words(text: str, attributes: dict) -> float:
    """Over how many days a change happened: a daily log's readings, a week, a day or two, else a month."""
    values = attributes.get("values") or []
    if attributes.get("daily") and len(values) >= 2:
        return float(len(values) - 1)
    if re.search(r"\b(?:a|one|this|last|in a) week\b|\bweek\b", text):
        return 7.0
    if re.search(r"\b(?:overnight|yesterday|two days|2 days|couple (?:of )?days)\b", text):
        return 2.0
    if re.search(r"\b(?:on|since|from|last|this past)\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:since|over) the weekend\b", text):
        # a weekday the earlier value was taken on is within the last week (a daily weigh-in log, HF action plans)
        return 7.0
    return 30.0


def _show(kind: str, values: dict) -> str:
    if kind == "blood_pressure":
        return f"{values['value']:g}/{values.get('value2') or 0:g}"
    if kind == "weight":
        pct = values.get("pct_change")
        return f"change of {values['change_lb']:+.1f} lb" + (f" ({pct:+.1f}%)" if pct is not None else "")
    return f"{values.get('value', 0):g}"
