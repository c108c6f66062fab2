"""Immunization memories: outside doses (named loosely: "the shot for that breathing virus", "the nose spray kind"),
denied ones, live vaccines against immunosuppression and the plan that forbids them."""
from __future__ import annotations

import json
import re
from functools import lru_cache

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import DATA_DIR, Knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import procedures_in_text, vaccines_in_text
from reconcile_app.reconciliation.types import Severity

from .cues import SURGERY, VACCINE_DENIED, VACCINE_RECEIVED
from .cues import pattern as cue_pattern_of
from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _days_apart, _long_ago, _short


# data/cues/cond_plans.json: a committed plan ("booked the shot for Thursday") against a conditional or a wish
PLAN_COMMITMENT = cue_pattern_of("plan_commitment")
PLAN_CONDITIONAL = cue_pattern_of("plan_conditional")


def committed_plan(text: str) -> bool:
    """The text commits to a future act (an appointment, a date, will/going to, a requirement someone set) and holds
    no conditional or wish ("if my doctor okays it I might", "maybe someday"): a plan, not a hypothetical."""
    return bool(PLAN_COMMITMENT.search(text)) and not PLAN_CONDITIONAL.search(text)


@lru_cache(maxsize=1)
def _vaccine_frames() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    rows = json.loads((DATA_DIR / "vaccines.json").read_text(encoding="utf-8"))
    return {r["id"]: (tuple(norm(w).strip() for w in r["frames"][0]), tuple(norm(w).strip() for w in r["frames"][1]))
            for r in rows if len(r.get("frames", ())) == 2}


def vaccines_by_frame(text: str, window: int = 12) -> set[str]:
    """Vaccine families named loosely: a shot near the disease in lay words ("the shot for that lung virus", "the
    two-dose one for shingles"), a live form by its route ("the flu ... the nose spray kind")."""
    words = norm(text).split()
    joined = f" {' '.join(words)} "
    found = set()
    for vid, (heads, diseases) in _vaccine_frames().items():
        h = [i for w in heads for i in _indexes(joined, w)]
        d = [i for w in diseases for i in _indexes(joined, w)]
        if any(abs(a - b) <= window for a in h for b in d):
            found.add(vid)
    if "flu_live" in found:
        found.discard("influenza")
    return found


def _indexes(joined: str, phrase: str) -> list[int]:
    out, start = [], joined.find(f" {phrase} ")
    while start != -1:
        out.append(joined[:start + 1].count(" ") - 1)
        start = joined.find(f" {phrase} ", start + 1)
    return out


class ImmunizationRules:
    """Immunization memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _vaccine_families(self, m: MemoryDraft, ctx: Context) -> set[str]:
        name = _attr(m, "name")
        families = vaccines_in_text(name, self.kb) if name else set()
        families = families or vaccines_in_text(m.content, self.kb) or vaccines_in_text(m.quote, self.kb)
        framed = vaccines_by_frame(ctx.around(m))
        if "flu_live" in framed:  # the route says which flu vaccine it was
            families = (families - {"influenza"}) | {"flu_live"}
        return families or vaccines_by_frame(m.quote)

    def _vaccine_in_chatter(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A vaccine a chatty sentence names loosely and says the patient received ("rolled up my sleeve for the shot
        for that lung virus"): read as an immunization."""
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not VACCINE_RECEIVED.search(quote):
            return None
        if not (vaccines_by_frame(m.quote) or vaccines_in_text(m.quote, self.kb) and re.search(r"\b(?:shot|vaccine|jab|dose)\b", quote)):
            return None
        found = self._immunization(m, ctx)
        return found if found.kind in (GAP, CONTRA) else None

    def _immunization(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """In order: no vaccine named (maybe a procedure), denied, history, a recorded dose near the date, else a dose
        from outside the record, raised for a live vaccine with immunosuppression."""
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        families = self._vaccine_families(m, ctx)
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
        return self._outside_dose(m, ctx, families, doses, label)

    def _outside_dose(self, m: MemoryDraft, ctx: Context, families: set[str], doses: list[ClinicalEntry], label: str) -> Verdict:
        """A dose the record does not show: cite the family's doses, else the conditions that call for it and the
        latest immunizations (the history a reviewer updates), and a plan that names the vaccine; a live vaccine meets
        immunosuppression through the interaction rows and the plan that forbids live vaccines."""
        live = any(v.live for v in self.kb.vaccines if v.id in families)
        v = Verdict(GAP, Cat.IMMUNIZATION, "vaccine-outside-dose", Severity.LOW, False,
                    f"Patient reports a {label} vaccine dose the record does not show" + (f"; latest recorded {doses[0].date[:10]}." if doses else "."))
        v.cite(*doses[:2])
        if not doses:
            indications = {c for vac in self.kb.vaccines if vac.id in families for c in vac.indications}
            v.cite(*ctx.idx.conditions_for(indications)[:2])
            v.cite(*sorted((e for e, _ in ctx.idx.vaccines if e.state == State.ACTIVE), key=lambda e: e.date, reverse=True)[:2])
        v.cite(*ctx.idx.careplans_mentioning([t for vac in self.kb.vaccines if vac.id in families for t in vac.terms])[:1])
        for sev, safe, why, partners in self._interactions(ctx, set(), [], live_vaccine=live):
            v.raise_to(sev, safe)
            v.cite(*partners[:2])
            v.explanation += f" {why.capitalize()}."
        if live:
            v.cite(*ctx.idx.careplans_mentioning(["live vaccine", "live vaccines"])[:1])
        return v

    def _planned_live_vaccine(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A live vaccine the patient has booked or been told to get, while the record holds what contraindicates it
        (immunosuppressants, high-dose steroids, chemotherapy, transplant, pregnancy): the plan is the moment to act
        (CDC ACIP general best practice guidelines: contraindications and precautions are screened before each dose).
        A conditional ("if I travel I might need...") stays a hypothetical; a non-live vaccine plan is no finding."""
        if not committed_plan(regex_text(m.quote)):
            return None
        # filed as a medicine or a condition ("the nasal spray flu thing"), a vaccine must be named by its frame
        families = self._vaccine_families(m, ctx) if m.category == "immunization" else vaccines_by_frame(m.quote)
        live = sorted(v.id for v in self.kb.vaccines if v.id in families and v.live)
        if not live:
            return None
        hits = self._interactions(ctx, set(), [], live_vaccine=True)
        if not hits:
            return None
        label = ", ".join(live).replace("_", " ")
        v = Verdict(GAP, Cat.IMMUNIZATION, "vaccine-planned-live", Severity.MEDIUM, False,
                    f"Patient plans a live {label} vaccine; the record holds a contraindication.")
        for sev, safe, why, partners in hits:
            v.raise_to(sev, safe)
            v.cite(*partners[:2])
            v.explanation += f" {why.capitalize()}."
        v.cite(*ctx.idx.careplans_mentioning(["live vaccine", "live vaccines"])[:1])
        return v
