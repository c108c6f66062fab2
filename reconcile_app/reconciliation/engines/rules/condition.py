"""Condition and symptom memories: red flags, diagnoses from outside, conditions said to be resolved, pregnancy."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.engines.cues import cue_pattern
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.gate import ERROR_RULE_PREFIX
from reconcile_app.reconciliation.knowledge import Knowledge, RedFlag, norm, regex_text, split_sentences
from reconcile_app.reconciliation.matching import (
    CondEntry, allergens_in_text, concepts_in_text, content_words, drugs_in_text, procedures_in_text, sites_in_text, stage_of,
)
from reconcile_app.reconciliation.types import SEVERITY_RANK, Severity

from .cues import pattern as cue_pattern_of
from .cues import (
    CHRONIC, CLINICIAN_NAMED, CLINICIAN_SAID, DIAGNOSED, DIAGNOSIS_RATED, ENVIRONMENTAL, REACTION, RESOLVED, RESOLVED_AFTER,
    SURGERY, WENT_AWAY,
)
from ..judge import retold_past, retold_period
from .verdict import AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _grounded_term, _looks_acute, _short

# one definition of what makes a word a diagnosis (a disease suffix or head noun), shared with the extractor
DIAGNOSIS_WORD = cue_pattern("diagnosis_word")
# the suffixes that name a disease of an organ or tissue (a complication is named this way: retinopathy, nephritis);
# acute illness words (a cold, the flu) are diagnoses but never a more specific form of a chronic one
_DISEASE_SUFFIX = re.compile(r"(?:itis|osis|oma|omas|emia|aemia|pathy|plasia|ectasis|penia|megaly)$")
# reconciler cues of this module's own family file (data/cues/conditions.json)
DATED_PAST = cue_pattern_of("dated_past")
CLAIMED_RISK = cue_pattern_of("claimed_risk")
CLAIMED_EFFECT = cue_pattern_of("claimed_effect")
PAST_HABIT = cue_pattern_of("past_habit")
TRANSITIVE_STOP = cue_pattern_of("transitive_stop")
DENIED_HAVING = cue_pattern_of("denied_having")
ELAPSED_SINCE = cue_pattern_of("elapsed_since")
IMPROVED = cue_pattern_of("improved")
LESSENED = cue_pattern_of("lessened")
HOPELESS_EVALUATIVE = cue_pattern_of("hopeless_evaluative")
HABITUAL_GET = cue_pattern_of("habitual_get")
# data/cues/cond_resolution.json: a condition said to be over in informal grammar, and who a later pronoun points to
RESOLVED_INFORMAL = cue_pattern_of("resolved_informal")
PEOPLE_REFERENT = cue_pattern_of("people_referent")
PERSON_STOP_COMPLEMENT = cue_pattern_of("person_stop_complement")
INTRANSITIVE_STOP_TAIL = cue_pattern_of("intransitive_stop_tail")
RECALLED_PAST = cue_pattern_of("recalled_past")
EPISODE_ENDED = cue_pattern_of("episode_ended")
# the same frame a couple of words back ("I get so out of breath": the frame governs "breath" two words on)
_HABITUAL_NEAR = re.compile(HABITUAL_GET.pattern.removesuffix("$") + r"(?:[\w']+\W+){0,2}$", re.IGNORECASE)
CHANGE_WORDS = cue_pattern_of("change_words")
_SUBJECT_PRONOUN = re.compile(r"\b(?:i|i'm|im|i've|ive|i'd|my|me|we|we're|our|he|he's|she|she's|they|they're)\b")
# a third-person subject named by a kin or social noun ("grandma's been seeing ...", "my dad keeps falling"): it governs
# the verb after it the way "he" or "she" does (English word order: subject before verb; ConText's experiencer cues)
_KIN_SUBJECT = re.compile(
    r"\b(?:grandma|grandpa|granny|nana|papa|mom|mum|mother|dad|father|husband|wife|son|daughter|sister|brother|aunt|uncle|"
    r"cousin|friend|neighbou?r|partner|boyfriend|girlfriend|roommate|coworker|grandson|granddaughter|kid|baby)"
    r"(?='s\b|\s+(?:(?:always|still|just|also|really|often)\s+)?(?:is|was|has|had|keeps|kept|gets|got|says|said|been)\b"
    r"|\s+(?:(?:always|still|just|also|really|often)\s+)?$)")
# a possessive of another person right before a clinician word: "her doctor", "his cardiologist", "my daughter's pediatrician"
_OTHERS_CLINICIAN = re.compile(r"\b(?:her|his|their|(?:my\W+)?(?:son|daughter|husband|wife|mom|mother|dad|father|sister|brother|kid|baby|partner|friend|neighbou?r)'?s|\w+'s)\W+(?:own\W+|new\W+|regular\W+)?$")
_OTHER_PRONOUNS = {"he", "he's", "she", "she's", "they", "they're"}
_CLITIC = re.compile(r"(\w)['\u2019](?:s|ll|d|re|ve)\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[,;:.!?]|\b(?:but|though|although|except|until|now|then)\b")
_BROAD_SITES = {"skin"}  # a site too broad to tie a sign to a record entry (a rash is not about past skin surgery)
PAST_DATE_DAYS = 60  # an event dated two months or more before the session is a retold history, not a new complaint
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@dataclass
class CondFacts:
    """What the condition rules read: the memory, the concepts its words name, and the record's matching entries."""

    m: MemoryDraft
    ctx: Context
    name: str
    status: str
    quote: str
    concepts: set[str]
    stage: str
    matches: list[CondEntry]
    resolved_claim: bool
    diagnosed: bool
    flag: Verdict | None = None

    @property
    def active(self) -> list[CondEntry]:
        return [ce for ce in self.matches if ce.entry.state == State.ACTIVE]

    @property
    def historical(self) -> list[CondEntry]:
        return [ce for ce in self.matches if ce.entry.state == State.HISTORICAL]

    @property
    def error(self) -> list[CondEntry]:
        return [ce for ce in self.matches if ce.entry.state == State.ERROR]


class ConditionRules:
    """Condition and symptom memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _red_flag_verdict(self, m: MemoryDraft, ctx: Context, text: str, *, only_classes: set[str] | None = None,
                          reread: bool = False) -> Verdict | None:
        """The red flags the text states, gated and not explained away, as one gap: the most severe decides, every flag
        cites what makes it dangerous (the conditions and drug classes of its row, its lab, the plan that watches it).
        reread: the memory was filed as chatter, so only a flag that is acute or that the record makes dangerous counts."""
        quote = regex_text(m.quote)
        if _dated_past(quote, m.mention_time) or retold_past(m) or retold_period(m) or (reread and (PAST_HABIT.search(quote) or RECALLED_PAST.search(quote))):
            # a retold history ("in June of 2022 the bleeding started", "back in '19", "twenty eighteen"), a past habit
            # or, in chatter, a sign recalled as shared history ("remember when I ...", "at the start") is no new red flag
            return None
        kept = self._red_flags_said(m, ctx, text, only_classes)
        if reread:
            kept = [f for f in kept if _acute(f) or (f.safety and self._flag_context(f, ctx))]
        if not kept:
            return None
        # the most severe first; among equals a row about a drug the patient is on (angioedema on an ACE inhibitor)
        # explains the sign better than a generic one (anaphylaxis), then a row the record makes dangerous
        kept.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -int(f.safety), -int(bool(f.requires_classes)),
                                 -int(bool(self._flag_context(f, ctx))), f.id))
        top = kept[0]
        category = Cat.ALLERGY if top.id in ("anaphylaxis", "rash") else Cat.CONDITION
        v = Verdict(GAP, category, f"redflag-{top.id}", top.severity, top.safety,
                    f"Patient reports {', '.join(f.label for f in kept[:3])}; not in the record.")
        for flag in kept:
            v.raise_to(flag.severity, flag.safety)
            self._cite_flag(v, flag, m, ctx)
        return v

    def _red_flags_said(self, m: MemoryDraft, ctx: Context, text: str, only_classes: set[str] | None) -> list[RedFlag]:
        """Rows whose lay words the text says (not denied in the rest of the turn), whose gate the record opens, and
        that nothing the patient takes or said explains."""
        quote = regex_text(m.quote)
        said = len(quote) if text.startswith(quote) and len(text) > len(quote) else None  # the rest is the extractor's name
        flags = [f for f in self.kb.red_flags_in(text) if not _denied_having(f, text) and not _someone_else_has(f, text)
                 and not _claimed_effect(f, text) and not _lessened(f, text, said) and not _only_evaluative_hopeless(f, text)]
        turns = regex_text(" ".join(ctx.turn_text.get(t, "") for t in m.turn_ids))
        if turns:
            # the quote may end before the answer: "asked if I still get dizzy spells ... I told her no, not since"
            flags = [f for f in flags if f.matches(turns) or not any(p.search(turns) for p in f.patterns)]
        if only_classes is not None:
            # inside a medication memory only the flags about that drug's own use count (rescue inhaler overuse)
            flags = [f for f in flags if set(f.classes) & only_classes and f.careplan]
        flags = [f for f in flags if not f.requires_conditions or ctx.idx.conditions_for(set(f.requires_conditions))]
        flags = [f for f in flags if not f.requires_classes or ctx.idx.meds_of_classes(set(f.requires_classes))]
        flags = [f for f in flags if not self._flag_explained(f, ctx, text)]
        # the standing state of a condition the record holds ("I get so winded on hills" with COPD), said with no word
        # of change, is that condition's baseline; a warning sign of its own (high severity) still counts
        flags = [f for f in flags if f.severity == Severity.HIGH or f.requires_classes or not self._baseline_of_known(f, ctx, text, turns)]
        if flags and (WENT_AWAY.search(text) or IMPROVED.search(text)):
            # a passing, already-resolved minor symptom ("swollen after the flight, went down overnight"); acute
            # red flags (chest pain, fainting, bleeding) matter even when they are over
            flags = [f for f in flags if f.severity == Severity.HIGH]
        return flags

    def _baseline_of_known(self, flag: RedFlag, ctx: Context, text: str, turns: str) -> bool:
        """The flag is said in the habitual present ("I get ...") about a condition of its row the record holds, and
        neither the quote nor its turn says it changed."""
        if not flag.conditions or not ctx.idx.conditions_for(set(flag.conditions)) or CHANGE_WORDS.search(turns or text):
            return False
        hits = flag.hits(text)
        if not hits:
            return False
        if all(HABITUAL_GET.search(text[max(0, hit.start() - 40):hit.start()]) for hit in hits):
            return True
        # the flag named only by the extractor's word ("shortness of breath") for the patient's "I get so out of
        # breath": the habitual frame must govern a word of that name
        named = {w for hit in hits for w in hit.group(0).split() if len(w) >= 5}
        return any(_HABITUAL_NEAR.search(text[max(0, at.start() - 50):at.start()])
                   for w in named for at in re.finditer(rf"\b{re.escape(w)}\b", text)
                   if all(not (h.start() <= at.start() < h.end()) for h in hits))

    def _flag_explained(self, flag: RedFlag, ctx: Context, text: str) -> bool:
        """A harmless cause the patient takes or names (iron darkens stools), unless the words go beyond what it explains
        (red or tarry stools) or the patient is on a drug that makes the sign dangerous whatever its cause."""
        if not flag.explained_by or any(p.search(text) for p in flag.unexplained):
            return False
        if flag.dangerous_with and ctx.idx.meds_of_classes(set(flag.dangerous_with)):
            return False
        session = regex_text(ctx.session_text)
        said = drugs_in_text(session, self.kb, fuzzy=False).drugs
        for cid in flag.explained_by:
            if ctx.idx.meds_of_classes({cid}, active_only=False) or any(cid in self.kb.drug_classes(d) for d in said) \
                    or any(norm(t).strip() in norm(session) for t in self.kb.classes[cid].lay):
                return True
        return False

    def _flag_context(self, flag: RedFlag, ctx: Context) -> list[ClinicalEntry]:
        """The record entries that make a flag dangerous for this patient: its conditions, then its drug classes."""
        return ctx.idx.conditions_for(set(flag.conditions))[:4] + ctx.idx.meds_of_classes(set(flag.classes))[:3]

    def _cite_flag(self, v: Verdict, flag: RedFlag, m: MemoryDraft, ctx: Context) -> None:
        """What a reviewer opens for a flag: the drug that causes or worsens it first when the row is about a drug, then
        the condition that makes it dangerous, its lab, and the plan that watches it."""
        conditions = ctx.idx.conditions_for(set(flag.conditions))[:4]
        meds = ctx.idx.meds_of_classes(set(flag.requires_classes or flag.classes))[:3]
        v.cite(*(meds + conditions if flag.requires_classes else conditions + meds))
        if flag.loinc:
            v.cite(ctx.idx.latest_observation(flag.loinc))
        site = self._flag_site_entries(ctx, regex_text(m.quote))
        v.cite(*site[:2])
        if flag.careplan or conditions or site:
            v.cite(*ctx.idx.careplans_addressing({e.id for e in conditions + site})[:1])
        if flag.id in ("anaphylaxis", "rash"):
            self._reaction_to_listed_allergen(v, m, ctx)
            v.cite(*ctx.idx.allergy_list)

    def _flag_site_entries(self, ctx: Context, text: str) -> list[ClinicalEntry]:
        """The record's conditions (active, resolved or from an encounter) and procedures at the body site the patient
        names with the sign: a red eye in a patient with past uveitis is a recurrence to check."""
        sites = sites_in_text(text, self.kb) - _BROAD_SITES
        if not sites:
            return []
        out = [ce.entry for ce in ctx.idx.conditions
               if ce.entry.state in (State.ACTIVE, State.HISTORICAL) and sites_in_text(ce.entry.display, self.kb) & sites]
        out += [entry for entry, _, psites in ctx.idx.procedures if entry.state == State.ACTIVE and psites & sites]
        return out

    def _condition(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """The first rule of CONDITION_ORDER that returns a verdict decides."""
        facts = self._cond_facts(m, ctx)
        for rule in CONDITION_ORDER:
            verdict = rule(self, facts)
            if verdict is not None:
                return verdict
        raise AssertionError("the last condition rule always decides")

    def _cond_facts(self, m: MemoryDraft, ctx: Context) -> CondFacts:
        name = _attr(m, "name")
        status = _attr(m, "stated_status").lower()
        quote = regex_text(m.quote)
        # "gout's gone", "the migraines'll...": a clitic on the condition's name still names it
        grounded = concepts_in_text(_CLITIC.sub(r"\1", m.quote), self.kb)
        named = concepts_in_text(name, self.kb) if name else set()
        # the named concept must be in the patient's words (an abbreviation like "mi" for miles is not a heart attack)
        concepts = (named & grounded) or (grounded if not named else set())
        if named and not concepts and name and f" {norm(name).strip()} " in norm(m.quote):
            concepts = named
        concepts -= {"pregnancy"}
        matches = ctx.idx.match_condition(concepts, content_words(name) if name else set())
        return CondFacts(m, ctx, name, status, quote, concepts, stage_of(name or m.content) or stage_of(m.quote), matches,
                         resolved_claim=_resolved_claim(m, ctx, status, quote),
                         diagnosed=status in ("diagnosed", "new") or bool(DIAGNOSED.search(quote)) or _named_by_clinician(m, ctx))

    # ---- the rules, in CONDITION_ORDER ------------------------------------------------------------------------

    def _cond_allergic_reaction(self, f: CondFacts) -> Verdict | None:
        """"hives from the contrast dye": a reaction to something is an allergy question."""
        m = f.m
        if m.category == "symptom" and m.assertion == Assertion.AFFIRMED and allergens_in_text(m.quote, self.kb) - ENVIRONMENTAL \
                and REACTION.search(f.quote):
            return self._allergy(m, f.ctx)
        return None

    def _cond_procedure_named(self, f: CondFacts) -> Verdict | None:
        """A repaired body part is a procedure, whatever the extractor called it; but a test that found a named
        condition ("the bone scan says I've got osteoporosis now") is about the condition when the procedure itself
        raises nothing."""
        if procedures_in_text(f.m.quote, self.kb) and SURGERY.search(f.quote) and f.m.assertion != Assertion.NEGATED:
            verdict = self._procedure(f.m, f.ctx)
            if verdict.kind in (CONTRA, GAP) or not f.concepts:
                return verdict
        return None

    def _cond_negated(self, f: CondFacts) -> Verdict | None:
        if f.m.assertion != Assertion.NEGATED:
            return None
        if f.active and f.resolved_claim:
            return self._condition_denied(f.active)
        return Verdict(NCR, Cat.CONDITION, "condition-negated", explanation="Denied symptom or condition; nothing to reconcile.")

    def _cond_stage_conflict(self, f: CondFacts) -> Verdict | None:
        """A different stage or type than the active entry ("stage 2, not stage 3")."""
        if not (f.stage and f.active):
            return None
        same = [ce for ce in f.active if ce.stage == f.stage]
        other = [ce for ce in f.active if ce.stage and ce.stage != f.stage]
        if not other or same:
            return None
        v = Verdict(CONTRA, Cat.CONDITION, "condition-stage-conflict", Severity.LOW, False,
                    f"Record lists {_short(other[0].entry)} as active; patient reports {f.stage}.")
        v.cite(*(ce.entry for ce in other))
        return v.cite(*self._condition_labs(f.ctx, f.concepts))

    def _cond_resolved(self, f: CondFacts) -> Verdict | None:
        """A chronic condition, or one a clinician declared over, said to be resolved ("my back pain is gone this week"
        is a good day, not a resolved diagnosis)."""
        if not (f.resolved_claim and f.active and f.m.assertion != Assertion.HISTORICAL):
            return None
        if f.concepts & CHRONIC or CLINICIAN_SAID.search(f.quote) or f.status == "resolved":
            return self._condition_denied(f.active, f.concepts, f.ctx)
        return None

    def _cond_historical_resolved(self, f: CondFacts) -> Verdict | None:
        """"I used to get X; it's been gone since last summer": a past condition the record still holds as active."""
        if f.m.assertion != Assertion.HISTORICAL or not (f.active and f.resolved_claim):
            return None
        return self._condition_denied(f.active, f.concepts, f.ctx)

    def _cond_historical(self, f: CondFacts) -> Verdict | None:
        if f.m.assertion != Assertion.HISTORICAL:
            return None
        if f.matches:
            return Verdict(AGREE, Cat.CONDITION, "condition-historical-known",
                           explanation="The past condition is in the record.").cite(*(ce.entry for ce in (f.historical or f.active)))
        return Verdict(NCR, Cat.CONDITION, "condition-historical", explanation="A past condition; nothing current to reconcile.")

    def _cond_dated_history(self, f: CondFacts) -> Verdict | None:
        """"my first kidney stone was in 2019", "two years since the bypass": an event dated well before the session, or
        the event time is counted from, that the record already holds (active, resolved or as history) agrees with it;
        a recurrence or a resolution needs words about now."""
        if f.m.assertion != Assertion.AFFIRMED or f.resolved_claim:
            return None
        terms = {t for c in f.concepts if c in self.kb.conditions for t in self.kb.conditions[c].terms} | ({f.name} if f.name else set())
        if not (_dated_past(f.quote, f.m.mention_time) or any(_term_after(f.quote, t, ELAPSED_SINCE) for t in terms if t.strip())):
            return None
        known = [ce.entry for ce in f.matches if ce.entry.state in (State.ACTIVE, State.HISTORICAL)]
        if not known:
            return None
        return Verdict(AGREE, Cat.CONDITION, "condition-dated-history",
                       explanation="A dated past event the record already holds.").cite(*known)

    def _cond_claimed_risk(self, f: CondFacts) -> Verdict | None:
        """"they say sugar gives you diabetes", "a post said the vaccine causes autism": a disease named as what
        something causes or risks is a claimed harm, not a diagnosis of the patient."""
        if f.m.assertion != Assertion.AFFIRMED:
            return None
        terms = {t for c in f.concepts if c in self.kb.conditions for t in self.kb.conditions[c].terms}
        terms |= {d.group(0) for d in DIAGNOSIS_WORD.finditer(f.quote)}
        if f.name:
            terms.add(f.name)
        if not any(_claimed_risk(f.quote, t) for t in terms if t.strip()):
            return None
        return Verdict(NCR, Cat.CONDITION, "condition-claimed-risk", explanation="A disease named as a claimed risk, not a diagnosis.")

    def _cond_red_flag(self, f: CondFacts) -> Verdict | None:
        """A red flag decides unless it is a non-acute one about a condition the record already lists."""
        f.flag = self._red_flag_verdict(f.m, f.ctx, regex_text(" ".join([f.m.quote, f.name])))
        if f.flag is not None and not (f.active and not _looks_acute(f.flag)):
            return f.flag
        return None

    def _cond_more_specific(self, f: CondFacts) -> Verdict | None:
        """A diagnosis more specific than the record's ("diabetic retinopathy" for a patient with diabetes): a disease word
        the patient was told that no record condition holds and that the matched concept does not name."""
        if not (f.active and f.diagnosed and f.m.assertion == Assertion.AFFIRMED):
            return None
        known = set(content_words(" ".join(ce.entry.display for ce in f.ctx.idx.conditions)))
        for c in f.concepts:
            if c in self.kb.conditions:
                known |= content_words(" ".join(self.kb.conditions[c].terms))
        extra = [w for w in (d.group(0) for d in DIAGNOSIS_WORD.finditer(f.quote))
                 if _DISEASE_SUFFIX.search(w) and not content_words(w) & known]
        if not extra:
            return None
        v = Verdict(GAP, Cat.CONDITION, "condition-more-specific", Severity.MEDIUM, False,
                    f"Patient reports {extra[0]}, more specific than the record's {_short(f.active[0].entry)}.")
        v.cite(*(ce.entry for ce in f.active))
        return v.cite(*self._condition_labs(f.ctx, f.concepts))

    def _cond_active_agrees(self, f: CondFacts) -> Verdict | None:
        if not f.active:
            return None
        return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees",
                       explanation=f"Record lists {_short(f.active[0].entry)} as active.").cite(*(ce.entry for ce in f.active))

    def _cond_unknown_outside_diagnosis(self, f: CondFacts) -> Verdict | None:
        """A diagnosis the tables have no concept for, matched on the extractor's grounded words."""
        m, ctx = f.m, f.ctx
        term = _grounded_term(m)
        if m.category != "condition" or f.concepts or not f.diagnosed or not term:
            return None
        words = content_words(term) | content_words(f.name)
        same = [ce for ce in ctx.idx.conditions if ce.words & words and ce.entry.state in (State.ACTIVE, State.HISTORICAL)]
        if any(ce.entry.state == State.ACTIVE for ce in same) or (same and _dated_past(f.quote, m.mention_time)):
            return Verdict(AGREE, Cat.CONDITION, "condition-active-agrees", explanation="The condition is in the record.").cite(*(ce.entry for ce in same))
        v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                    f"Patient reports a new diagnosis ({term}) that the record does not list.")
        v.cite(*(ce.entry for ce in same))
        v.cite(*self._context_conditions(ctx, ctx.around(m))[:2])
        return v.cite(*self._site_related(ctx, sites_in_text(ctx.around(m), self.kb)))

    def _cond_symptom_unflagged(self, f: CondFacts) -> Verdict | None:
        if f.m.category == "symptom" or not f.concepts:
            return Verdict(NCR, Cat.CONDITION, "symptom-unflagged", explanation="A symptom without red-flag features; nothing to reconcile.")
        return None

    def _cond_not_in_record(self, f: CondFacts) -> Verdict:
        """A known condition the active record lacks: voided entry, recurrence, outside diagnosis, or an undocumented
        chronic disease (a passing mention of a common complaint is chatter)."""
        labels = ", ".join(sorted(self.kb.conditions[c].terms[0] for c in f.concepts if c in self.kb.conditions))
        if f.error:
            v = Verdict(GAP, Cat.CONDITION, f"{ERROR_RULE_PREFIX}condition-only-entry", Severity.MEDIUM, False,
                        f"Patient reports {labels}; the record's only entry for it is marked entered-in-error.")
            v.cite(*(ce.entry for ce in f.error))
        elif f.historical:
            v = Verdict(GAP, Cat.CONDITION, "condition-recurrence", Severity.LOW, False,
                        f"Record shows {_short(f.historical[0].entry)} as {f.historical[0].entry.status}; patient reports it now.")
            v.cite(*(ce.entry for ce in f.historical))
        elif f.diagnosed:
            v = Verdict(GAP, Cat.CONDITION, "condition-outside-diagnosis", Severity.MEDIUM, False,
                        f"Patient reports a diagnosis of {labels} that is not in the record.")
            for c in f.concepts:
                if c in self.kb.conditions:
                    v.raise_to(*self.kb.conditions[c].diagnosis)
        elif not any(c in self.kb.conditions and c in DIAGNOSIS_RATED for c in f.concepts) or f.status not in ("", "ongoing", "new", "worse"):
            return Verdict(NCR, Cat.CONDITION, "condition-mention", explanation="A passing mention; no diagnosis reported.")
        else:
            v = Verdict(GAP, Cat.CONDITION, "condition-undocumented", Severity.LOW, False, f"Patient reports {labels}, which the record does not list.")
        related = {r for c in f.concepts if c in self.kb.conditions for r in self.kb.conditions[c].related}
        v.cite(*f.ctx.idx.conditions_for(related, states=(State.ACTIVE, State.HISTORICAL)))
        v.cite(*self._condition_labs(f.ctx, f.concepts))
        if f.flag is not None:
            v.raise_to(f.flag.severity, f.flag.safety)
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


def _after_quote(m: MemoryDraft, ctx: Context, sentences: int = 2) -> str:
    """The next sentences of the memory's turn after its quote (what a pronoun there points back to is the memory)."""
    for turn_id in m.turn_ids:
        text = ctx.turn_text.get(turn_id, "")
        at = text.find(m.quote) if m.quote else -1
        if at >= 0:
            rest = text[at + len(m.quote):]
            return " ".join(split_sentences(rest.strip())[:sentences])
    return ""


def _resolved_claim(m: MemoryDraft, ctx: Context, status: str, quote: str) -> bool:
    """The condition itself is said to be over: a resolution cue, in standard or informal grammar, in the quote or the
    sentences after it; not when only an episode ended ("the flare is gone now") and nothing says it stayed away."""
    if RESOLVED_INFORMAL.search(quote) or _resolved_after(m, ctx):
        return True
    if EPISODE_ENDED.search(quote):
        return False
    return status == "resolved" or bool(RESOLVED.search(quote))


def _resolved_after(m: MemoryDraft, ctx: Context) -> bool:
    """"It says I have migraines. I don't get those no more.": the next sentence says the named thing is over ("they
    stopped", not "the surgeon stopped my aspirin": a stop with an object is someone stopping a thing), and its
    pronoun points to the thing, not to people named on the way ("the doctors ... they stopped by")."""
    after = _after_quote(m, ctx)
    text = regex_text(m.quote + " " + after)
    if RESOLVED_INFORMAL.search(regex_text(after)):
        return True
    for hit in RESOLVED_AFTER.finditer(text):
        said = hit.group(0)
        at = max(said.rfind("stopped"), said.rfind("quit"))
        if at >= 0 and (_stop_of_people(text, hit.start() + at) or TRANSITIVE_STOP.match(text, hit.start() + at)):
            continue
        if _pronoun_points_to_people(text, hit):
            continue
        return True
    return False


def _stop_of_people(text: str, at: int) -> bool:
    """"they stopped by", "they stopped calling", "they stopped metformin": the stop takes a complement only people
    take, or an object (someone stopped a thing); only an intransitive stop ("they just stopped on their own") says
    the complaint itself ended (Levin 1993: the causative/inchoative alternation of stop and quit)."""
    word = re.match(r"\w+", text[at:])
    if not word:
        return False
    return bool(PERSON_STOP_COMPLEMENT.match(text, at + word.end())) or not INTRANSITIVE_STOP_TAIL.match(text, at + word.end())


def _pronoun_points_to_people(text: str, hit: re.Match[str]) -> bool:
    """A 'they'/'them' cue whose nearest candidate antecedent is people or a care setting named since the last
    condition-like word ("the headaches are in my chart, but the nurses ... they stopped"), not the condition."""
    if not re.match(r"(?:they|them)\b", hit.group(0)):
        return False
    before = text[max(0, hit.start() - 100):hit.start()]
    people = list(PEOPLE_REFERENT.finditer(before))
    return bool(people) and not DIAGNOSIS_WORD.search(before[people[-1].end():])


def _dated_past(text: str, when: datetime) -> bool:
    """The text dates an event by a calendar year (and month) at least PAST_DATE_DAYS before the session; a year alone
    counts as its last month, so "in 2025" said in January 2026 is not yet a retold history."""
    for hit in DATED_PAST.finditer(text):
        year = int(hit.group("year"))
        month = _MONTHS.index(hit.group("month")[:3].lower()) + 1 if hit.group("month") else 12
        if not when.year - 90 <= year <= when.year:
            continue  # not a plausible calendar year of this patient's life
        if (when.date() - date(year, month, 28)).days >= PAST_DATE_DAYS:
            return True
    return False


def _claimed_risk(text: str, term: str) -> bool:
    """The term is said as what something causes or risks ("gives you diabetes", "linked to liver disease")."""
    return _term_after(text, term, CLAIMED_RISK)


def _term_after(text: str, term: str, lead: re.Pattern[str]) -> bool:
    """The term is said right after words the lead pattern ends on (a pattern anchored at the end of what precedes)."""
    for hit in re.finditer(rf"\b{re.escape(term.strip().lower())}\b", text):
        if lead.search(text[max(0, hit.start() - 80):hit.start()]):
            return True
    return False


def _named_by_clinician(m: MemoryDraft, ctx: Context) -> bool:
    """"urgent care. said gout": a clinician or care setting named the condition, in the quote or the rest of its turn;
    someone else's clinician ("her doctor", "my son's pediatrician") names that person's condition, not the patient's."""
    text = regex_text(ctx.around(m))
    return any(not _OTHERS_CLINICIAN.search(text[max(0, hit.start() - 25):hit.start()]) for hit in CLINICIAN_NAMED.finditer(text))


def _acute(flag: RedFlag) -> bool:
    """A flag that needs same-day care wherever it is said: high severity and safety-critical."""
    return flag.severity == Severity.HIGH and flag.safety


# The decision order of a condition or symptom memory: the first rule that returns a verdict decides.
CONDITION_ORDER = (
    ConditionRules._cond_allergic_reaction,
    ConditionRules._cond_procedure_named,
    ConditionRules._cond_negated,
    ConditionRules._cond_stage_conflict,
    ConditionRules._cond_resolved,
    ConditionRules._cond_historical_resolved,
    ConditionRules._cond_historical,
    ConditionRules._cond_dated_history,
    ConditionRules._cond_red_flag,
    ConditionRules._cond_claimed_risk,
    ConditionRules._cond_more_specific,
    ConditionRules._cond_active_agrees,
    ConditionRules._cond_unknown_outside_diagnosis,
    ConditionRules._cond_symptom_unflagged,
    ConditionRules._cond_not_in_record,
)


def _clauses_before(flag: RedFlag, text: str) -> list[str]:
    """The clause leading up to each place the text says the flag's words (at most 120 characters back to a break)."""
    out = []
    for hit in flag.hits(text):
        before = text[max(0, hit.start() - 120):hit.start()]
        breaks = list(_CLAUSE_BREAK.finditer(before))
        out.append(before[breaks[-1].end():] if breaks else before)
    return out


def _claimed_effect(flag: RedFlag, text: str) -> bool:
    """Every place the text says the flag's words follows a claim of what something does to people in general ("those
    pills make your pressure drop so low"): a claimed effect, not the patient's sign (cues: claimed_effect)."""
    hits = flag.hits(text)
    return bool(hits) and all(CLAIMED_EFFECT.search(text[max(0, h.start() - 80):h.start()]) for h in hits)


def _denied_having(flag: RedFlag, text: str) -> bool:
    """Every place the text says the flag's words is inside a denial of having it that runs from earlier in the same
    clause ("I haven't had one lick of that chest pain since"), beyond the few words the table's own check reaches."""
    clauses = _clauses_before(flag, text)
    return bool(clauses) and all(DENIED_HAVING.search(clause) for clause in clauses)


# a contrast after the graded word ("less tired but foggy all day") grades something else (Quirk et al. 1985 s13.41)
_CONTRAST = re.compile(r"\b(?:but|though|although|yet|except|still)\b")
# rows never set aside for a graded wording: any word of self-harm is kept, however it is put (safety first)
_NEVER_LESSENED = frozenset({"suicidal"})


def _lessened(flag: RedFlag, text: str, said: int | None = None) -> bool:
    """Every place the text says the flag's words comes right after a comparative of decrease ("less dizzy", "not as
    wobbly"): a receding sign, graded against a worse before, is easing rather than new (comparison of inferiority).
    said: where the patient's words end and the extractor's name for the sign begins ("woozy" named "dizziness"): a hit
    in that name is graded by a comparative of decrease before any word of the patient's own."""
    if flag.id in _NEVER_LESSENED:
        return False
    graded_words = said is not None and any(LESSENED.search(text[:w.start()]) and not _CONTRAST.search(text[w.start():said])
                                            for w in re.finditer(r"\w+", text[:said]))
    hits = flag.hits(text)
    return bool(hits) and all(graded_words if said is not None and hit.start() >= said
                              else LESSENED.search(text[max(0, hit.start() - 40):hit.start()]) for hit in hits)


def _only_evaluative_hopeless(flag: RedFlag, text: str) -> bool:
    """The self-harm row hit only by the bare word 'hopeless', each inside a verdict on a skill or a device ("the
    printer is hopeless"): an evaluative adjective, not hopelessness. Any other self-harm word keeps the flag."""
    if flag.id != "suicidal":
        return False
    hits = flag.hits(text)
    frames = [frame.span() for frame in HOPELESS_EVALUATIVE.finditer(text)]
    return bool(hits) and all(hit.group(0).lower() == "hopeless" and any(a <= hit.start() < b for a, b in frames) for hit in hits)


def _someone_else_has(flag: RedFlag, text: str) -> bool:
    """Every place the text says the flag's words, the nearest person pronoun before it in its clause is a third-person
    subject ("I told him that's why he gets winded on the stairs"): the nearest subject governs the verb (English word
    order: subject before verb); "he says I get winded" and "they said my stools were black" stay the patient's."""
    clauses = _clauses_before(flag, text)
    return bool(clauses) and all(_nearest_subject_is_other(clause) for clause in clauses)


def _nearest_subject_is_other(clause: str) -> bool:
    subjects = [(h.start(), h.group(0)) for h in _SUBJECT_PRONOUN.finditer(clause)]
    subjects += [(h.start(), "she") for h in _KIN_SUBJECT.finditer(clause)]
    return bool(subjects) and max(subjects)[1] in _OTHER_PRONOUNS
