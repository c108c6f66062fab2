"""Measurement memories: home readings against the thresholds of the measurement table and the record's values."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, eval_rule, regex_text
from reconcile_app.reconciliation.types import SEVERITY_RANK

from .cues import LAB_KINDS
from .verdict import AGREE, Cat, Context, GAP, NCR, Verdict, _attr, _with_attributes


_NUM = r"(\d{1,3}(?:\.\d+)?)"


class ObservationRules:
    """Measurement memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _measurement(self, m: MemoryDraft, ctx: Context) -> Verdict:
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
        readings = _readings(m, kind, quote)
        conditions = {c for c in ctx.idx.active_concepts}
        worst: tuple[int, object, dict] | None = None
        sex = (getattr(getattr(ctx.idx.record, "patient", None), "sex", "") or "").lower()
        for values in readings:
            values = {**values, "sex": sex}  # sex-specific thresholds (haemoglobin)
            for rule in measure.rules:
                if eval_rule(rule.when, values, conditions):
                    rank = SEVERITY_RANK[rule.severity] * 2 + int(rule.safety)
                    if worst is None or rank > worst[0]:
                        worst = (rank, rule, values)
                    break
        latest = ctx.idx.latest_observation(measure.loinc)
        related_conditions = self._conditions_with_related(ctx, set(measure.conditions))
        if m.assertion == Assertion.HISTORICAL and worst is None:
            return Verdict(NCR, Cat.OBSERVATION, "measure-historical")
        if worst is None:
            if not readings:
                return Verdict(NCR, Cat.OBSERVATION, "measure-no-value", explanation="No value to compare.")
            v = Verdict(AGREE, Cat.OBSERVATION, "measure-in-range", explanation=f"Reported {kind.replace('_', ' ')} is within the reference range.")
            return v.cite(latest)
        _, rule, values = worst
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
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", ""))
        except ValueError:
            return None
    return None


def _readings(m: MemoryDraft, kind: str, quote: str) -> list[dict]:
    """Every reading in the memory: the extracted value plus the others the patient listed in the same quote."""
    a = m.attributes
    value, value2, unit = _num(a.get("value")), _num(a.get("value2")), str(a.get("unit") or "").lower()
    out: list[dict] = []
    if kind == "blood_pressure":
        pairs = [(float(s), float(d)) for s, d in re.findall(r"\b(\d{2,3})\s*(?:/|over)\s*(\d{2,3})\b", quote)]
        if value is not None:
            pairs.append((value, value2 or 0.0))
        out = [{"value": s, "value2": d} for s, d in pairs if 50 <= s <= 300]
    elif kind == "glucose":
        values = [value] if value is not None else []
        if "mmol" not in unit:
            values += [float(x) for x in re.findall(r"\b(\d{2,3})\b", quote) if 20 <= float(x) <= 700 and not re.search(rf"\b{x}\s*(?:%|lb|pounds|steps|min|mins|minutes|hours|days|years|mg\b(?!/))", quote)]
        out = [{"value": v * 18.0 if "mmol" in unit and v < 35 else v} for v in values]
    elif kind == "temperature":
        if value is not None:
            celsius = (value - 32) * 5 / 9 if value > 50 or "f" in unit else value
            out = [{"value": value, "celsius": celsius}]
    elif kind == "weight":
        change = _num(a.get("change"))
        gained = re.search(r"(?:gain\w*|up|put on|heavier)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote) or re.search(
            _NUM + r"\s*(?:lb|lbs|pounds|kg)\s*(?:\w+\s*){0,3}(?:gain|heavier|up)", quote)
        lost = re.search(r"(?:lost|down|dropped)\D{0,15}" + _NUM + r"\s*(?:lb|lbs|pounds|kg)", quote)
        if change is None and gained:
            change = float(gained.group(1))
        elif change is None and lost:
            change = -float(lost.group(1))
        if change is not None:
            if "kg" in quote and "lb" not in quote and "pound" not in quote:
                change *= 2.2
            days = 7.0 if re.search(r"\b(?:a|one|this|last|in a) week\b|\bweek\b", quote) else (
                2.0 if re.search(r"\b(?:overnight|yesterday|two days|2 days|couple (?:of )?days)\b", quote) else 30.0)
            intentional = bool(re.search(r"\b(?:diet|trying|goal|on purpose|ozempic|wegovy|program|walking)\b", quote))
            out = [{"change_lb": change, "days": days, "intentional": intentional}]
    else:
        if value is not None:
            out = [{"value": value, "value2": value2}]
    return out


def _show(kind: str, values: dict) -> str:
    if kind == "blood_pressure":
        return f"{values['value']:g}/{values.get('value2') or 0:g}"
    if kind == "weight":
        return f"change of {values['change_lb']:+g} lb"
    return f"{values.get('value', 0):g}"
