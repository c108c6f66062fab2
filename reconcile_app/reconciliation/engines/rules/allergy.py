"""Allergy memories: a new reaction, a listed allergen taken again, an allergy tolerated since."""
from __future__ import annotations

import re

from reconcile_app.fhir.clinical import State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, regex_text, split_sentences
from reconcile_app.reconciliation.matching import DrugMention, allergens_in_text, drugs_in_text
from reconcile_app.reconciliation.types import Severity

from .cues import ALLERGY_NOT_MINE, ALLERGY_RECALLED, ENVIRONMENTAL, EXPOSURE, REACTION, TOLERATED, about_someone_else
from .cues import pattern as cue_pattern_of

# data/cues/cond_plans.json: "if I took it I'd break out" is a counterfactual, not an exposure
PLAN_CONDITIONAL = cue_pattern_of("plan_conditional")
# the words that make a statement about a substance an allergy statement (AAAAI/ACAAI 2022 drug allergy practice
# parameter: a reaction history, or the patient's own allergy label); a lab level or a plan is neither
ALLERGY_WORD = re.compile(r"\b(?:allerg\w*|intoleran\w*|sensitiv\w*|can'?t (?:take|have|tolerate)|makes? me (?:sick|throw up|itch\w*|swell)|sick from|react\w*|side effects?|anaphyla\w*|epi-?pen)\b")
_COUNTERFACTUAL = re.compile(r"\b(?:would|wouldn'?t|'d|might|could|probably|gonna|going to|will|'ll|ill|ask(?:ing)? about)\b")
from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _short


class AllergyRules:
    """Allergy memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _allergy(self, m: MemoryDraft, ctx: Context) -> Verdict:
        substance = _attr(m, "substance")
        text = " ".join([substance, m.content, m.quote])
        quote = regex_text(m.quote + " " + _attr(m, "reaction"))
        allergen_ids = allergens_in_text(substance or m.content, self.kb) or allergens_in_text(m.quote, self.kb)
        mention = drugs_in_text(substance, self.kb) if substance else DrugMention()
        if not mention.drugs:
            mention = drugs_in_text(m.content + " " + m.quote, self.kb)
        hits = ctx.idx.allergy_matches(allergen_ids, mention.drugs)
        active = [ae.entry for ae in hits if ae.entry.state == State.ACTIVE]
        inactive = [ae.entry for ae in hits if ae.entry.state == State.INACTIVE]
        stated = _attr(m, "stated_status").lower()
        reaction = _attr(m, "reaction").lower()
        tolerated = (m.assertion == Assertion.NEGATED or stated in ("tolerated", "resolved") or reaction in ("none", "no reaction", "no")
                     or bool(TOLERATED.search(quote)))
        if active and ALLERGY_NOT_MINE.search(regex_text(ctx.around(m))):
            # "it says I'm allergic to latex? that's my mother's": the entry belongs to someone else
            return Verdict(CONTRA, Cat.ALLERGY, "allergy-not-the-patients", Severity.LOW, False,
                           f"Record lists an active allergy ({_short(active[0])}); patient says it is someone else's or a mix-up.").cite(*active)
        if active and not tolerated and m.assertion == Assertion.AFFIRMED and TOLERATED.search(regex_text(ctx.around(m))) \
                and not (stated == "new" or reaction):
            tolerated = True  # "...allergic to X? I've taken it for years, never had a reaction": the turn goes on to say so
        if m.assertion == Assertion.HISTORICAL and not tolerated:
            if active or inactive:
                return Verdict(AGREE, Cat.ALLERGY, "allergy-historical-known", explanation="The allergy is in the record.").cite(*(active or inactive))
            return Verdict(NCR, Cat.ALLERGY, "allergy-historical", explanation="A past reaction; nothing current to reconcile.")
        if tolerated:
            if active:
                return Verdict(CONTRA, Cat.ALLERGY, "allergy-tolerated", Severity.LOW, False,
                               f"Record lists an active allergy ({_short(active[0])}); patient reports exposure without a reaction.").cite(*active)
            if inactive:
                return Verdict(AGREE, Cat.ALLERGY, "allergy-inactive-agrees", explanation=f"Record already marks {_short(inactive[0])} inactive.").cite(*inactive)
            return Verdict(NCR, Cat.ALLERGY, "allergy-none", explanation="No reaction reported; nothing to reconcile.")
        if not (allergen_ids or mention.drugs):
            return self._condition(m, ctx)
        if _counterfactual(quote) and not active:
            # "if it's still low I'm gonna ask about IV iron instead of pills": a conditional plan names no reaction
            return Verdict(NCR, Cat.ALLERGY, "allergy-conditional", explanation="A conditional or planned exposure; no reaction reported.")
        if active:
            # the exposure may be told in the turn around the reaction ("took one Sunday... my lips felt puffy")
            exposed = EXPOSURE.search(quote) or ((stated == "new" or reaction) and EXPOSURE.search(regex_text(ctx.around(m))))
            if mention.drugs and exposed and not _counterfactual(quote) and not about_someone_else(quote):
                v = Verdict(CONTRA, Cat.ALLERGY, "allergy-listed-allergen-reaction", Severity.MEDIUM, False,
                            f"Record lists {_short(active[0])} as an active allergy; patient reports being given it again.")
                self._anaphylaxis(v, quote, ctx)
                orders = ctx.idx.match_meds(mention)
                return v.cite(*active, *orders.active, *orders.historical)
            return Verdict(AGREE, Cat.ALLERGY, "allergy-known", explanation=f"Record lists {_short(active[0])} as an active allergy.").cite(*active)
        if not (reaction or REACTION.search(quote) or ALLERGY_WORD.search(quote) or EXPOSURE.search(quote)):
            # "my iron, it's always kinda low": a substance named with no reaction, no allergy word and no exposure
            return Verdict(NCR, Cat.ALLERGY, "allergy-no-reaction-said", explanation="A substance named without a reaction.")
        rule = "allergy-reaction-inactive" if inactive else "allergy-new-reaction"
        v = Verdict(GAP, Cat.ALLERGY, rule, Severity.MEDIUM, False,
                    "Patient reports a reaction to " + (substance or ", ".join(sorted(mention.names)) or "a substance") + " that the allergy list does not show.")
        drug_entries = ctx.idx.match_meds(mention) if mention.drugs else None
        if drug_entries:
            # the order of the drug it followed is what the finding is about (and what a repeat is keyed on)
            v.cite(*drug_entries.active, *drug_entries.historical, *drug_entries.error)
        v.cite(*inactive)
        v.cite(*ctx.idx.allergy_list)
        drug_allergen = any(a.classes or a.drugs for a in self.kb.allergens if a.id in allergen_ids)
        if mention.drugs or drug_allergen:
            # an unrecorded drug reaction: the next prescriber will not know to avoid it
            v.safety = True
            v.rule = "allergy-new-drug-reaction"
        self._anaphylaxis(v, quote, ctx)
        return v

    def _allergy_disowned_in_chatter(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """"the penicillin one isn't mine, that was my brother's" filed as chatter: a recorded active allergy the
        patient disowns still contradicts the record (Joint Commission NPSG 01.01.01; AAAAI/ACAAI 2022 drug allergy
        practice parameter: allergy labels are reviewed and removed when they are wrong)."""
        quote = regex_text(m.quote)
        if not ALLERGY_NOT_MINE.search(quote):
            return None
        allergens = allergens_in_text(m.quote, self.kb) - ENVIRONMENTAL
        mention = drugs_in_text(m.quote, self.kb)
        if not any(ae.entry.state == State.ACTIVE for ae in ctx.idx.allergy_matches(allergens, mention.drugs)):
            return None
        verdict = self._allergy(m, ctx)
        return verdict if verdict.kind == CONTRA else None

    def _anaphylaxis(self, v: Verdict, quote: str, ctx: Context) -> None:
        for flag in self.kb.red_flags:
            if flag.id == "anaphylaxis" and flag.matches(quote):
                v.raise_to(flag.severity, flag.safety)
                v.cite(*ctx.idx.conditions_for(set(flag.conditions)))
                v.cite(*ctx.idx.meds_of_classes(set(flag.classes)))
                v.explanation += " Signs of anaphylaxis."

    def _reaction_to_listed_allergen(self, v: Verdict, m: MemoryDraft, ctx: Context) -> None:
        """A reaction after taking something the allergy list already names contradicts the record: it is still being given."""
        # what was taken ("Lisinopril I think? ... I took one Sunday"), not an allergy only recalled ("except the aspirin")
        sentences = split_sentences(ctx.around(m))
        if not any(EXPOSURE.search(regex_text(s)) for s in sentences):
            return
        around = " ".join(s for s in sentences if EXPOSURE.search(regex_text(s)) or not ALLERGY_RECALLED.search(regex_text(s)))
        mention = drugs_in_text(around, self.kb)
        hits = [ae.entry for ae in ctx.idx.allergy_matches(allergens_in_text(around, self.kb) - ENVIRONMENTAL, mention.drugs)
                if ae.entry.state == State.ACTIVE]
        if not hits:
            return
        v.kind, v.category = CONTRA, Cat.ALLERGY
        v.rule = f"{v.rule}+listed-allergen"
        v.explanation = f"{v.explanation} Record lists an active allergy ({_short(hits[0])}) to what was taken."
        orders = ctx.idx.match_meds(mention) if mention.drugs else None
        v.cites[:0] = [h for h in hits if h not in v.cites]
        if orders:
            v.cite(*orders.active, *orders.historical)


def _counterfactual(quote: str) -> bool:
    """"if I took penicillin I'd break out", "if they gave me sulfa I would swell up", "if it stays low I'm gonna ask
    about the IV kind": a conditional with a modal or a future is what would happen, not an exposure (ConText
    hypothetical triggers: if, would, could, might; TimeML future modality)."""
    return bool(re.search(r"\bif\b", quote)) and bool(_COUNTERFACTUAL.search(quote))
