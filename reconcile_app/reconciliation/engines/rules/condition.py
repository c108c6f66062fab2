"""Condition and symptom memories: red flags, diagnoses from outside, conditions said to be resolved, pregnancy."""
from __future__ import annotations

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.gate import ERROR_RULE_PREFIX
from reconcile_app.reconciliation.knowledge import Knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import (
    allergens_in_text, concepts_in_text, content_words, drugs_in_text, procedures_in_text, sites_in_text, stage_of,
)
from reconcile_app.reconciliation.types import SEVERITY_RANK, Severity

from .cues import (
    CHRONIC, CLINICIAN_SAID, DIAGNOSED, DIAGNOSIS_RATED, ENVIRONMENTAL, REACTION, RESOLVED, SURGERY, WENT_AWAY,
)
from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _grounded_term, _looks_acute, _short


class ConditionRules:
    """Condition and symptom memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _red_flag_verdict(self, m: MemoryDraft, ctx: Context, text: str, *, only_classes: set[str] | None = None) -> Verdict | None:
        flags = [f for f in self.kb.red_flags if f.matches(text)]
        turns = regex_text(" ".join(ctx.turn_text.get(t, "") for t in m.turn_ids))
        if turns:
            # the quote may end before the answer: "asked if I still get dizzy spells ... I told her no, not since"
            flags = [f for f in flags if f.matches(turns) or not any(p.search(turns) for p in f.patterns)]
        if only_classes is not None:
            # inside a medication memory only the flags about that drug's own use count (rescue inhaler overuse)
            flags = [f for f in flags if set(f.classes) & only_classes and f.careplan]
        flags = [f for f in flags if not f.requires_conditions or ctx.idx.conditions_for(set(f.requires_conditions))]
        flags = [f for f in flags if not f.requires_classes or ctx.idx.meds_of_classes(set(f.requires_classes))]
        session = regex_text(ctx.session_text)
        kept = []
        for flag in flags:
            explained = False
            for cid in flag.explained_by:
                if ctx.idx.meds_of_classes({cid}, active_only=False) or any(
                    cid in self.kb.drug_classes(d) for d in drugs_in_text(session, self.kb, fuzzy=False).drugs
                ) or any(norm(t).strip() in norm(session) for t in self.kb.classes[cid].lay):
                    explained = True
            if not explained:
                kept.append(flag)
        if kept and WENT_AWAY.search(text):
            # a passing, already-resolved minor symptom ("swollen after the flight, went down overnight"); acute
            # red flags (chest pain, fainting, bleeding) matter even when they are over
            kept = [f for f in kept if f.severity == Severity.HIGH]
        if not kept:
            return None
        kept.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -int(f.safety), f.id))
        top = kept[0]
        category = Cat.ALLERGY if top.id in ("anaphylaxis", "rash") else Cat.CONDITION
        v = Verdict(GAP, category, f"redflag-{top.id}", top.severity, top.safety,
                    f"Patient reports {', '.join(f.label for f in kept[:3])}; not in the record.")
        for flag in kept:
            v.raise_to(flag.severity, flag.safety)
            v.cite(*ctx.idx.conditions_for(set(flag.conditions))[:4])
            v.cite(*ctx.idx.meds_of_classes(set(flag.classes))[:3])
            if flag.loinc:
                v.cite(ctx.idx.latest_observation(flag.loinc))
            if flag.careplan:
                v.cite(*ctx.idx.careplans_addressing({e.id for e in ctx.idx.conditions_for(set(flag.conditions))}))
            if flag.id in ("anaphylaxis", "rash"):
                self._reaction_to_listed_allergen(v, m, ctx)
                v.cite(*ctx.idx.allergy_list)
        return v

    def _condition(self, m: MemoryDraft, ctx: Context) -> Verdict:
        name = _attr(m, "name")
        status = _attr(m, "stated_status").lower()
        quote = regex_text(m.quote)
        if m.category == "symptom" and m.assertion == Assertion.AFFIRMED and allergens_in_text(m.quote, self.kb) - ENVIRONMENTAL and REACTION.search(quote):
            return self._allergy(m, ctx)  # "hives from the contrast dye": a reaction to something is an allergy question
        if procedures_in_text(m.quote, self.kb) and SURGERY.search(quote) and m.assertion != Assertion.NEGATED:
            return self._procedure(m, ctx)  # a repaired body part is a procedure, whatever the extractor called it
        grounded = concepts_in_text(m.quote, self.kb)
        named = concepts_in_text(name, self.kb) if name else set()
        # the named concept must be in the patient's words (an abbreviation like "mi" for miles is not a heart attack)
        concepts = (named & grounded) or (grounded if not named else set())
        if named and not concepts and name and f" {norm(name).strip()} " in norm(m.quote):
            concepts = named
        concepts -= {"pregnancy"}
        stage = stage_of(name or m.content) or stage_of(m.quote)
        matches = ctx.idx.match_condition(concepts, content_words(name) if name else set())
        active = [ce for ce in matches if ce.entry.state == State.ACTIVE]
        historical = [ce for ce in matches if ce.entry.state == State.HISTORICAL]
        error = [ce for ce in matches if ce.entry.state == State.ERROR]
        resolved_claim = status == "resolved" or bool(RESOLVED.search(quote))

        if m.assertion == Assertion.NEGATED:
            if active and resolved_claim:
                return self._condition_denied(active)
            return Verdict(NCR, Cat.CONDITION, "condition-negated", explanation="Denied symptom or condition; nothing to reconcile.")

        # a different stage/type than the active entry ("stage 2, not stage 3")
        if stage and active:
            same = [ce for ce in active if ce.stage == stage]
            other = [ce for ce in active if ce.stage and ce.stage != stage]
            if other and not same:
                v = Verdict(CONTRA, Cat.CONDITION, "condition-stage-conflict", Severity.LOW, False,
                            f"Record lists {_short(other[0].entry)} as active; patient reports {stage}.")
                v.cite(*(ce.entry for ce in other))
                v.cite(*self._condition_labs(ctx, concepts))
                return v
        if (resolved_claim and active and m.assertion != Assertion.HISTORICAL
                and (concepts & CHRONIC or CLINICIAN_SAID.search(quote) or status == "resolved")):
            # "my back pain is gone this week" is a good day, not a resolved diagnosis
            return self._condition_denied(active, concepts, ctx)

        if m.assertion == Assertion.HISTORICAL:
            if matches:
                return Verdict(AGREE, Cat.CONDITION, "condition-historical-known", explanation="The past condition is in the record.").cite(*(ce.entry for ce in (historical or active)))
            return Verdict(NCR, Cat.CONDITION, "condition-historical", explanation="A past condition; nothing current to reconcile.")

        flag = self._red_flag_verdict(m, ctx, regex_text(" ".join([m.quote, name])))
        if flag is not None and not (active and not _looks_acute(flag)):
            return flag

        if active:
            return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees", explanation=f"Record lists {_short(active[0].entry)} as active.").cite(*(ce.entry for ce in active))
        diagnosed = status in ("diagnosed", "new") or bool(DIAGNOSED.search(quote))
        if m.category == "condition" and not concepts and diagnosed and _grounded_term(m):
            term = _grounded_term(m)
            words = content_words(term) | content_words(name)
            same = [ce for ce in ctx.idx.conditions if ce.words & words and ce.entry.state in (State.ACTIVE, State.HISTORICAL)]
            if any(ce.entry.state == State.ACTIVE for ce in same):
                return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees", explanation="The condition is in the record.").cite(*(ce.entry for ce in same))
            v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                        f"Patient reports a new diagnosis ({term}) that the record does not list.")
            v.cite(*(ce.entry for ce in same))
            v.cite(*self._context_conditions(ctx, ctx.around(m))[:2])
            v.cite(*self._site_related(ctx, sites_in_text(ctx.around(m), self.kb)))
            return v
        if m.category == "symptom" or not concepts:
            return Verdict(NCR, Cat.CONDITION, "symptom-unflagged", explanation="A symptom without red-flag features; nothing to reconcile.")
        labels = ", ".join(sorted(self.kb.conditions[c].terms[0] for c in concepts if c in self.kb.conditions))
        if error:
            v = Verdict(GAP, Cat.CONDITION, f"{ERROR_RULE_PREFIX}condition-only-entry", Severity.MEDIUM, False,
                        f"Patient reports {labels}; the record's only entry for it is marked entered-in-error.")
            v.cite(*(ce.entry for ce in error))
        elif historical:
            v = Verdict(GAP, Cat.CONDITION, "condition-recurrence", Severity.LOW, False,
                        f"Record shows {_short(historical[0].entry)} as {historical[0].entry.status}; patient reports it now.")
            v.cite(*(ce.entry for ce in historical))
        elif diagnosed:
            v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                        f"Patient reports a diagnosis of {labels} that is not in the record.")
            for c in concepts:
                if c in self.kb.conditions:
                    v.raise_to(*self.kb.conditions[c].diagnosis)
        else:
            # a passing mention of a common complaint ("my allergies", "anxious about it") is chatter; only a
            # chronic disease the tables rate for a diagnosis is worth a reviewer's look when the record lacks it
            if not any(c in self.kb.conditions and c in DIAGNOSIS_RATED for c in concepts) or status not in ("", "ongoing", "new", "worse"):
                return Verdict(NCR, Cat.CONDITION, "condition-mention", explanation="A passing mention; no diagnosis reported.")
            v = Verdict(GAP, Cat.CONDITION, "condition-undocumented", Severity.LOW, False,
                        f"Patient reports {labels}, which the record does not list.")
        related = {r for c in concepts if c in self.kb.conditions for r in self.kb.conditions[c].related}
        v.cite(*ctx.idx.conditions_for(related, states=(State.ACTIVE, State.HISTORICAL)))
        v.cite(*self._condition_labs(ctx, concepts))
        if flag is not None:
            v.raise_to(flag.severity, flag.safety)
        return v

    def _condition_labs(self, ctx: Context, concepts: set[str]) -> list[ClinicalEntry]:
        out = []
        for c in sorted(concepts):
            concept = self.kb.conditions.get(c)
            if concept and concept.loinc:
                lab = ctx.idx.latest_observation(concept.loinc[:1]) or ctx.idx.latest_observation(concept.loinc)
                if lab:
                    out.append(lab)
        return out[:2]

    def _condition_denied(self, active: list, concepts: set[str] | None = None, ctx: Context | None = None) -> Verdict:
        v = Verdict(CONTRA, Cat.CONDITION, "condition-claimed-resolved", Severity.LOW, False,
                    f"Record lists {_short(active[0].entry)} as active; patient says it is resolved or absent.")
        v.cite(*(ce.entry for ce in active))
        if ctx is not None and concepts:
            v.cite(*self._condition_labs(ctx, concepts))
        return v

    def _pregnancy(self, m: MemoryDraft, ctx: Context) -> Verdict:
        if ctx.idx.conditions_for({"pregnancy"}):
            return Verdict(AGREE, Cat.CONDITION, "pregnancy-known", explanation="Pregnancy is in the record.").cite(*ctx.idx.conditions_for({"pregnancy"}))
        v = Verdict(GAP, Cat.CONDITION, "pregnancy-undocumented", Severity.MEDIUM, False, "Patient reports a pregnancy; the record does not show one.")
        # the pregnancy is the new fact: the interaction to check is with the teratogens already prescribed
        teratogens = ctx.idx.meds_of_classes({"teratogen"})
        if teratogens:
            v.raise_to("high", True)
            v.cite(*teratogens[:4])
            v.explanation += " Active medicines include drugs to avoid in pregnancy."
        return v
