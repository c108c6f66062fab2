"""Lifestyle memories: smoking and alcohol status against the record (a quit, a relapse), and routine context."""
from __future__ import annotations

import re

from reconcile_app.fhir.clinical import ClinicalEntry, State
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

    def _alcohol_relapse(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """Drinking said by a patient whose record holds an alcohol use disorder in remission: the remission has ended
        (any memory category: "a couple of beers at the wedding" may be filed as a care activity or chatter)."""
        table = self.kb.smoking["alcohol"]
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not any(re.search(p, quote) for p in table["drinking_patterns"]) \
                or any(re.search(p, quote) for p in table["denial_patterns"]):
            return None
        disorder = _alcohol_disorder_in_remission(ctx, table["disorder_words"])
        if not disorder:
            return None
        rule = table["relapse"]
        v = Verdict(CONTRA, Cat.CONDITION, "alcohol-relapse", rule["severity"], bool(rule["safety"]),
                    f"Record lists {disorder[0].display} in remission; patient reports drinking again.")
        worse = ctx.idx.conditions_for(set(rule["worse_with"]))
        if worse:
            v.raise_to(rule["worse"][0], bool(rule["worse"][1]))
            v.explanation += " Alcohol harms the liver disease the record lists."
        v.cite(*disorder, *worse[:2])
        v.cite(*ctx.idx.careplans_addressing({e.id for e in disorder + worse})[:1])
        observations = [ctx.idx.latest_observation([code]) for code in table["loinc"]]
        return v.cite(*[o for o in observations if o is not None][:1])

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
        """The patient's smoking said against the record's status: denied, quit (with gum or patches), or smoking now."""
        alcohol = self._alcohol(m, ctx)
        if alcohol is not None:
            return alcohol
        sm = self.kb.smoking
        quote = regex_text(m.quote)
        quit_spans = [h.span() for p in sm["quit_patterns"] for h in re.finditer(p, quote)]
        # "no more cigarettes": the cigarette said inside a quit is not smoking now
        current = any(not any(a <= h.start() and h.end() <= b for a, b in quit_spans)
                      for p in sm["current_patterns"] for h in re.finditer(p, quote))
        denial = any(re.search(p, quote) for p in sm["denial_patterns"])
        quit = bool(quit_spans) and not current
        if not (current or denial or quit) or m.assertion in (Assertion.HYPOTHETICAL, Assertion.UNCERTAIN):
            return None
        status, entries = ctx.idx.smoking_status()
        related = ctx.idx.conditions_for({"asthma", "copd", "coronary_disease"})
        if quit and m.assertion == Assertion.AFFIRMED and status == "current":
            return self._smoking_quit(ctx, entries)
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

    def _smoking_quit(self, ctx: Context, entries: list[ClinicalEntry]) -> Verdict:
        """A quit (or nicotine replacement, which is a quit attempt) against a record of current smoking."""
        rule = self.kb.smoking["quit"]
        tobacco = ctx.idx.conditions_for({"tobacco_use"})
        v = Verdict(CONTRA, Cat.OBSERVATION, "smoking-quit", rule["severity"], bool(rule["safety"]),
                    "Record documents current tobacco use; patient reports having quit (or using nicotine replacement to quit).")
        v.cite(*entries, *tobacco[:1])
        return v.cite(*ctx.idx.careplans_addressing({e.id for e in tobacco})[:1])


def _alcohol_disorder_in_remission(ctx: Context, words: list[str]) -> list[ClinicalEntry]:
    """The record's alcohol use disorder entries that are in remission (resolved, or active with 'remission' said)."""
    out = []
    for ce in ctx.idx.conditions:
        entry = ce.entry
        text = regex_text(entry.display)
        if entry.state == State.ERROR or not any(w in text for w in words):
            continue
        status = regex_text(" ".join([entry.status or "", entry.detail or ""]))
        if entry.state == State.HISTORICAL or "remission" in status or "remission" in text:
            out.append(entry)
    return out
