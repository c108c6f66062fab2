"""Lifestyle memories: smoking and alcohol status against the record, and routine context."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, regex_text
from reconcile_app.reconciliation.types import Severity

from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _text


class LifestyleRules:
    """Lifestyle memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _lifestyle(self, m: MemoryDraft, ctx: Context) -> Verdict:
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device
        smoking = self._smoking(m, ctx, _text(m))
        if smoking is not None:
            return smoking
        hit = self._restriction_hit(m, ctx)
        if hit is not None:
            return self._care_activity(m, ctx)
        return self._diet_conflict(m, ctx) or Verdict(NCR, Cat.CAREPLAN, "lifestyle", explanation="Routine or context; no clinical content to reconcile.")

    def _alcohol(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        table = self.kb.smoking["alcohol"]
        quote = regex_text(m.quote)
        heavy = any(re.search(p, quote) for p in table["heavy_patterns"])
        denial = any(re.search(p, quote) for p in table["denial_patterns"])
        if not (heavy or denial) or m.assertion not in (Assertion.AFFIRMED, Assertion.NEGATED):
            return None
        status, entries = ctx.idx.alcohol_status()
        if not status:
            return None
        if heavy and m.assertion == Assertion.AFFIRMED and status in ("none",):
            return Verdict(CONTRA, Cat.OBSERVATION, "alcohol-status-contradicted", table["severity"], table["safety"],
                           "Record documents no alcohol use; patient reports drinking daily or heavily.").cite(*entries)
        if denial and not heavy and status == "heavy":
            return Verdict(CONTRA, Cat.OBSERVATION, "alcohol-denied", table["severity"], table["safety"],
                           "Record documents heavy alcohol use; patient says they do not drink.").cite(*entries)
        return None

    def _smoking(self, m: MemoryDraft, ctx: Context, text: str) -> Verdict | None:
        alcohol = self._alcohol(m, ctx)
        if alcohol is not None:
            return alcohol
        sm = self.kb.smoking
        quote = regex_text(m.quote)
        current = any(re.search(p, quote) for p in sm["current_patterns"])
        denial = any(re.search(p, quote) for p in sm["denial_patterns"])
        if not (current or denial) or m.assertion in (Assertion.HYPOTHETICAL, Assertion.UNCERTAIN):
            return None
        status, entries = ctx.idx.smoking_status()
        related = ctx.idx.conditions_for({"asthma", "copd", "coronary_disease"})
        if denial and m.assertion != Assertion.HISTORICAL and not current:
            if status == "current":
                return Verdict(CONTRA, Cat.OBSERVATION, "smoking-denied", sm["severity"], sm["safety"],
                               "Record documents current tobacco use; patient says they do not smoke.").cite(*entries)
            return Verdict(AGREE, Cat.OBSERVATION, "smoking-agrees", explanation="Not smoking agrees with the record.").cite(*entries) if entries else None
        if current and m.assertion == Assertion.AFFIRMED:
            if status in ("never", "former"):
                v = Verdict(CONTRA, Cat.OBSERVATION, "smoking-status-contradicted", sm["severity"], sm["safety"],
                            f"Record documents the patient as a {status} smoker; patient reports smoking now.")
                return v.cite(*entries, *related[:1])
            if status == "current":
                return Verdict(AGREE, Cat.OBSERVATION, "smoking-agrees", explanation="Current smoking is in the record.").cite(*entries)
            return Verdict(GAP, Cat.OBSERVATION, "smoking-undocumented", Severity.LOW, False,
                           "Patient reports smoking; the record has no smoking status.").cite(*related[:1])
        return None
