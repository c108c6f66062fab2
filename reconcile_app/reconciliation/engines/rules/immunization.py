"""Immunization memories: outside doses, denied ones, live vaccines against immunosuppression."""
from __future__ import annotations

from reconcile_app.fhir.clinical import State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, regex_text
from reconcile_app.reconciliation.matching import procedures_in_text, vaccines_in_text
from reconcile_app.reconciliation.types import Severity

from .cues import SURGERY, VACCINE_DENIED
from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _days_apart, _long_ago, _short


class ImmunizationRules:
    """Immunization memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _immunization(self, m: MemoryDraft, ctx: Context) -> Verdict:
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        families = vaccines_in_text(_attr(m, "name"), self.kb) if _attr(m, "name") else set()
        families = families or vaccines_in_text(m.content, self.kb) or vaccines_in_text(m.quote, self.kb)
        if not families:
            if procedures_in_text(text, self.kb) or SURGERY.search(regex_text(text)):
                return self._procedure(m, ctx)
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-unnamed", explanation="No vaccine identified.")
        doses = sorted((e for e, fams in ctx.idx.vaccines if fams & families and e.state == State.ACTIVE), key=lambda e: e.date, reverse=True)
        label = ", ".join(sorted(families)).replace("_", " ")
        denied = m.assertion == Assertion.NEGATED or (m.assertion == Assertion.AFFIRMED and bool(VACCINE_DENIED.search(regex_text(m.quote))))
        if denied:
            if doses:
                return Verdict(CONTRA, Cat.IMMUNIZATION, "vaccine-denied", Severity.LOW, False,
                               f"Record documents {len(doses)} {label} dose(s), latest {doses[0].date[:10]}; patient says never received.").cite(*doses[:4])
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-negated")
        if m.assertion == Assertion.HISTORICAL or _long_ago(m):
            if doses:
                return Verdict(AGREE, Cat.IMMUNIZATION, "vaccine-historical-known", explanation="Vaccine history is in the record.").cite(*doses[:2])
            return Verdict(NCR, Cat.IMMUNIZATION, "vaccine-historical")
        when = self._event_time(m)
        close = [e for e in doses if (_days_apart(e.date, when) or 10**6) <= 60]
        if close:
            return Verdict(AGREE, Cat.IMMUNIZATION, "vaccine-recorded", explanation=f"Record documents {_short(close[0])} on {close[0].date[:10]}.").cite(*close)
        live = any(v.live for v in self.kb.vaccines if v.id in families)
        v = Verdict(GAP, Cat.IMMUNIZATION, "vaccine-outside-dose", Severity.LOW, False,
                    f"Patient reports a {label} vaccine dose the record does not show" + (f"; latest recorded {doses[0].date[:10]}." if doses else "."))
        v.cite(*doses[:2])
        if not doses:
            # a first dose of a family: the conditions that make it recommended are what the reviewer checks
            indications = {c for vac in self.kb.vaccines if vac.id in families for c in vac.indications}
            v.cite(*ctx.idx.conditions_for(indications)[:3])
            if not v.cites:
                v.cite(*sorted((e for e, _ in ctx.idx.vaccines if e.state == State.ACTIVE), key=lambda e: e.date, reverse=True)[:1])
        for sev, safe, why, partners in self._interactions(ctx, set(), [], live_vaccine=live):
            v.raise_to(sev, safe)
            v.cite(*partners[:2])
            v.explanation += f" {why.capitalize()}."
        return v
