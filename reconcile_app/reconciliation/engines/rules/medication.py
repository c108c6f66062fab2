"""Medication memories: which drug, what the patient did with it, and how that meets the record's orders."""
from __future__ import annotations

import re
from dataclasses import dataclass

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.gate import ERROR_RULE_PREFIX
from reconcile_app.reconciliation.knowledge import Drug, Knowledge, norm, regex_text, split_sentences
from reconcile_app.reconciliation.matching import DrugMention, MedMatch, drugs_in_text, terminology_drugs
from reconcile_app.reconciliation.types import Severity

from .cues import (
    BRIEF_DISCONNECT, BROAD_CLASSES, CLAUSE_SPLIT, CURRENT_USE, DEVICE_OFF, HALF, LESS, MG,
    MODAL_START, MORE, OCCASIONAL, ONCE, OTC_CLASSES, OTHER_SOURCE, POSSESSION_RETRACTED, RECORD_MG, REGULAR, RESUME, SKIP, SKIP_HABIT,
    START, STOP, STOP_REFERRING, SUPPLY_RESUMED, TABLETS, TOLERATED, WORD_NUM, about_someone_else, pattern,
)
from .dosing import ScheduleConflict, schedule_conflict
from .verdict import (
    AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _as_needed, _attr, _clip, _lexicon_terms, _order_text,
    _severity_max, _short,
)

# data/cues/medication.json: stopping idioms, an as-needed medicine not needed, a stated amount as a change
STOP_IDIOM = pattern("stop_idiom")
NOT_NEEDED = pattern("not_needed")
DISCARDED = pattern("discarded")
AMOUNT_CHANGE = pattern("amount_change")
STATED_AMOUNT = pattern("stated_amount")
FIRST_PERSON_ANY = pattern("first_person_any")
GENERAL_CLAIM = pattern("general_claim")
COUNT_PER_PERIOD = pattern("count_per_period")
REPLACED = pattern("replaced")
HYPOTHETICAL_CHANGE = pattern("hypothetical_change")
INTERRUPTION = pattern("interruption")
NEGATED_STOP = pattern("negated_stop")
ACTIVITY_STOP = pattern("activity_stop")
_WITH_PHRASE = re.compile(r"\b(?:with|along with|together with|alongside|plus)\b.*$")
_ORDER_TABLETS = re.compile(r"\b(half|one|two|three|four|1/2|\d+(?:\.\d+)?)\s*(?:a\s+)?(?:tablets?|tabs?|capsules?|caps?|pills?)\b",
                            re.IGNORECASE)
_AMOUNT_WORDS = {"half": 0.5, "1/2": 0.5, "one": 1.0, "a": 1.0, "two": 2.0, "a couple": 2.0, "three": 3.0, "four": 4.0}


@dataclass
class MedFacts:
    """What the medication rules read: the memory, its drug, what the patient did, and the record's matching orders."""

    m: MemoryDraft
    ctx: Context
    quote: str
    mention: DrugMention
    action: str
    someone_else: bool
    match: MedMatch
    classes: set[str]
    label: str


class MedicationRules:
    """Medication memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _drug_mention(self, m: MemoryDraft, ctx: Context | None = None) -> DrugMention:
        """The drug(s) the memory is about, grounded in the patient's own words.

        The extractor's attribute picks which drug of the quote is meant. A drug the quote does not name is trusted
        when the extractor grounded it elsewhere (see `_attributed_drug`); an over-eager fuzzy match is not.
        """
        grounded = drugs_in_text(_purpose_compounds(m.quote, self.kb), self.kb)
        named_text = " ; ".join([_attr(m, "drug"), _attr(m, "drug_class"), *_lexicon_terms(m)]).strip(" ;")
        named = drugs_in_text(named_text, self.kb) if named_text else DrugMention()
        if not named and not grounded and named_text:
            # the extractor resolved a described device ("the orange disk one") to a class by its name: keep the class
            # when the quote names one of its dosage forms; the record then says which order of that class is meant
            text, words = f" {norm(named_text)} ", set(norm(m.quote).split())
            forms = {c.id for c in self.kb.classes.values() if c.forms and (f" {norm(c.label).strip()} " in text or f" {c.id.replace('_', ' ')} " in text)
                     and words & set(c.forms)}
            if forms:
                return DrugMention(lay_classes=forms)
        if named:
            drugs = [d for d in named.drugs if d in grounded.drugs]
            classes = named.lay_classes & grounded.lay_classes
            if drugs or classes:
                return DrugMention(drugs=drugs, lay_classes=classes if not drugs else set())
            if grounded and (not _attr(m, "drug") or not any(d.name in norm(m.quote) or any(a in norm(m.quote) for a in d.aliases)
                                                               for d in named.drugs)):
                # the attribute names a drug the quote never says (carried over from the turn before): the quote's own drug wins
                return grounded
            # the extractor resolved a lay name ("the hydro something", "water pill") to a drug: keep it when the
            # quote names that drug's class or a prefix of it
            quote = norm(m.quote)
            for d in named.drugs:
                if grounded.lay_classes & self.kb.drug_classes(d) or any(
                    len(w) >= 4 and d.name.startswith(w) for w in quote.split()
                ):
                    return DrugMention(drugs=[d])
            return self._attributed_drug(m, ctx, named) if not grounded else DrugMention()
        if grounded:
            return grounded
        drug = _attr(m, "drug")
        if drug and f" {norm(drug).strip()} " in norm(m.quote):
            return DrugMention(raw_names={w for w in norm(drug).split() if len(w) >= 4 and w.isalpha()})
        return self._attributed_drug(m, ctx, named)

    def _attributed_drug(self, m: MemoryDraft, ctx: Context | None, named: DrugMention) -> DrugMention:
        """The extractor's drug when the quote does not name it but the extractor grounded it: linked to the record's
        order ("my pen" -> the liraglutide order), or named in the memory's own turns under any of its names (the
        class in one sentence, "Sudafed" in the next). A near-miss spelling the conversation never says is not."""
        drug = _attr(m, "drug")
        if not drug:
            return self._questioned_class(m, ctx, named)
        if not _attr(m, "record_ref").startswith(("MedicationRequest/", "MedicationStatement/")):
            text = " ".join([m.quote, ctx.around(m) if ctx is not None else ""])
            if drug not in terminology_drugs(text):
                return DrugMention()
        if named.drugs:
            return DrugMention(drugs=list(named.drugs))
        return DrugMention(raw_names={w for w in norm(drug).split() if len(w) >= 4 and w.isalpha()})

    def _questioned_class(self, m: MemoryDraft, ctx: Context | None, named: DrugMention) -> DrugMention:
        """A short answer ("nope, quit a while back") to a question naming a class ("Still on the blood thinner?"): the
        record's one active order of that class is what was asked about; with none or several, no drug is named."""
        if ctx is None or not _attr(m, "from_question") or named.drugs:
            return DrugMention()
        label = norm(_attr(m, "drug_class"))
        classes = set(named.lay_classes) or {c.id for c in self.kb.classes.values() if label.strip() and norm(c.label) == label}
        if not classes:
            return DrugMention()
        asked = DrugMention(lay_classes=classes)
        return asked if len(ctx.idx.match_meds(asked).active) == 1 else DrugMention()

    def _action(self, m: MemoryDraft, ctx: Context | None = None) -> str:
        action = _attr(m, "action").lower()
        change = _attr(m, "dose_change").lower()
        # "stopped by the pharmacy", "quit smoking": a stop verb about a visit or an activity is not the drug's stop
        quote = ACTIVITY_STOP.sub(" ", regex_text(m.quote))
        clause = ACTIVITY_STOP.sub(" ", _drug_clause(m.quote, self.kb))  # only the clause naming the drug: "stopped the Advil, taking Tylenol"
        negated_stop = bool(NEGATED_STOP.search(clause or quote))  # "never took a break from it": continued
        if action in ("", "taking") and clause and not change and not negated_stop:
            if HALF.search(clause) or LESS.search(clause):
                return "less"
            if MORE.search(clause):
                return "more"
            if STOP.search(clause) or SKIP_HABIT.search(clause) or STOP_IDIOM.search(clause):
                return "stopped"
        if ctx is not None and action in ("", "taking") and not negated_stop:
            # a stop said about "it" in the next sentence of the same turn ("its the water pill. so i quit it.")
            rest = regex_text(ctx.around(m))
            if not STOP.search(quote) and STOP.search(rest) and STOP_REFERRING.search(rest):
                # the stop must not be about another drug named in the same sentence
                names = {d.name for d in drugs_in_text(m.quote, self.kb, fuzzy=False).drugs}
                for sentence in split_sentences(rest):
                    if STOP_REFERRING.search(sentence):
                        other = {d.name for d in drugs_in_text(sentence, self.kb, fuzzy=False).drugs}
                        if not other or other & names:
                            return "stopped"
        if m.assertion == Assertion.NEGATED and action in ("", "taking", "took_once"):
            action = "stopped"
        if action in ("changed_dose", "") or change:
            if change in ("half", "less") or HALF.search(quote) or LESS.search(quote):
                return "less"
            if change in ("double", "more") or MORE.search(quote):
                return "more"
        if action:
            return {"skipped": "stopped", "changed_dose": "changed"}.get(action, action)
        if STOP.search(quote):
            return "stopped"
        if SKIP.search(quote):
            return "stopped"
        if RESUME.search(quote):
            return "resumed"
        if START.search(quote):
            return "started"
        if ONCE.search(quote) and not REGULAR.search(quote):
            return "took_once"
        return "taking"

    def _class_sev(self, classes: set[str], which: str, default: tuple[str, bool]) -> tuple[str, bool]:
        best = default if not classes else ("", False)
        for cid in classes:
            cls = self.kb.classes.get(cid)
            if not cls or not getattr(cls, which)[0]:
                continue  # a class the tables hold no facts about says nothing about severity
            sev, safe = getattr(cls, which)
            best = (_severity_max(best[0], sev), best[1] or safe)
        return best if best[0] else default

    def _entry_classes(self, ctx: Context, entries: list[ClinicalEntry]) -> set[str]:
        ids = {(e.resource_type, e.id) for e in entries}
        out: set[str] = set()
        for me in ctx.idx.meds:
            if (me.entry.resource_type, me.entry.id) in ids:
                out |= me.classes
        return out

    def _mention_classes(self, mention: DrugMention, class_text: str = "") -> set[str]:
        classes = set(mention.lay_classes)
        for d in mention.drugs:
            classes |= self.kb.drug_classes(d)
        if not classes and class_text:
            # a drug the tables do not know: the extractor's class words ("opioid analgesic") name a known class
            normed = norm(class_text)
            for cls in self.kb.classes.values():
                if f" {norm(cls.label).strip()} " in normed or f" {cls.id.replace('_', ' ')} " in normed:
                    classes |= self.kb.class_closure({cls.id})
        return classes

    def _interactions(self, ctx: Context, classes: set[str], drugs: list[Drug], *, live_vaccine: bool = False,
                      pregnant: bool = False) -> list[tuple[str, bool, str, list[ClinicalEntry]]]:
        """Interaction rows that fire for what the patient takes against the record: (severity, safety, why, partners)."""
        mine = {f"class:{c}" for c in classes} | {f"drug:{n}" for d in drugs for n in (d.name, *d.components)}  # Tylenol PM is diphenhydramine too
        if live_vaccine:
            mine.add("vaccine:live")
        out = []
        for row in self.kb.interactions:
            for own, other in ((row.a, row.b), (row.b, row.a)):
                if own not in mine:
                    continue
                partners = self._partners(ctx, other, pregnant)
                if partners is None:
                    continue
                lab = ctx.idx.latest_observation(row.loinc) if row.loinc else None
                out.append((row.severity, row.safety, row.why, partners + ([lab] if lab else [])))
                break
        return out

    def _partners(self, ctx: Context, ref: str, pregnant: bool) -> list[ClinicalEntry] | None:
        kind, _, value = ref.partition(":")
        if kind == "class":
            found = ctx.idx.meds_of_classes({value})
        elif kind == "drug":
            found = [me.entry for me in ctx.idx.meds if me.entry.state == State.ACTIVE and value in me.names]
        elif kind == "condition":
            found = ctx.idx.conditions_for({value})
        elif kind == "state" and value == "pregnancy":
            return [] if pregnant or ctx.idx.conditions_for({"pregnancy"}) else None
        else:
            return None
        return found or None

    def _medication(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """Who takes it, which drug, then the first rule of MEDICATION_ORDER that decides."""
        if about_someone_else(regex_text(m.quote)):
            return Verdict(NCR, Cat.MEDICATION, "subject-other-in-quote", explanation="The quote describes someone else's medicine.")
        if _possession_retracted(m, ctx):
            return Verdict(NCR, Cat.MEDICATION, "subject-other-repaired", explanation="The patient corrects 'my' to someone else's medicine.")
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device  # "took my insulin pump off": the device names the order, whatever else the quote names
        mention = self._drug_mention(m, ctx)
        if not mention:
            procedure = self._procedure_like(m, ctx)
            return procedure or Verdict(NCR, Cat.MEDICATION, "med-unnamed", explanation="No drug could be identified.")
        facts = self._med_facts(m, ctx, mention)
        for rule in MEDICATION_ORDER:
            verdict = rule(self, facts)
            if verdict is not None:
                return verdict
        raise AssertionError("the last medication rule always decides")

    def _med_facts(self, m: MemoryDraft, ctx: Context, mention: DrugMention) -> MedFacts:
        quote = regex_text(m.quote)
        someone_else = _attr(m, "source").lower() == "someone_else" or bool(OTHER_SOURCE.search(quote))
        action = self._action(m, ctx)
        if someone_else and _attr(m, "action").lower() in ("", "taking", "took_once", "started"):
            action = "taking"  # "my wife's pills when mine run out": the borrowing is the news, not a stop
        if action == "stopped" and SUPPLY_RESUMED.search(quote):
            action = "taking"  # "the pharmacy was out, I picked it up the next day": a bridged gap, not a stop
        match = ctx.idx.match_meds(mention)
        if action in ("less", "more") and _usual_amount(quote, mention, match.active):
            action = "taking"  # "two of the spironolactones and half a furosemide" when the orders say 2 and a half
        classes = self._mention_classes(mention, _attr(m, "drug_class")) | self._entry_classes(ctx, match.active + match.historical + match.error)
        label = _clip(", ".join(sorted(mention.names)), 60) or "this medicine"
        return MedFacts(m, ctx, quote, mention, action, someone_else, match, classes, label)

    # ---- the rules, in MEDICATION_ORDER ----------------------------------------------------------------------

    def _med_red_flag_in_use(self, f: MedFacts) -> Verdict | None:
        """A red flag in the same breath (rescue inhaler many times a day) outranks a plain agreement."""
        if not f.match.active or f.action in ("stopped", "less"):
            return None
        return self._red_flag_verdict(f.m, f.ctx, f.quote, only_classes=self._entry_classes(f.ctx, f.match.active))

    def _med_historical(self, f: MedFacts) -> Verdict | None:
        if f.m.assertion != Assertion.HISTORICAL or f.action == "stopped":
            return None
        if f.match.active or f.match.historical:
            return Verdict(AGREE, Cat.MEDICATION, "med-historical-known",
                           explanation=f"Past use of {f.label} is in the record.").cite(*(f.match.historical or f.match.active))
        return Verdict(NCR, Cat.MEDICATION, "med-historical", explanation="Past medication use; nothing current to reconcile.")

    def _med_listed_allergen(self, f: MedFacts) -> Verdict | None:
        return self._allergen_taken(f.m, f.ctx, f.mention, f.action)

    def _med_as_needed_not_taken(self, f: MedFacts) -> Verdict | None:
        """A dose of an as-needed order not taken, or the medicine not needed ("haven't needed one in weeks", "carry
        it, never had to use it"), is how the order is meant to be used; one given up or run out of is still news."""
        if f.action != "stopped" or not f.match.active or not all(_as_needed(e) for e in f.match.active):
            return None
        not_taken = _attr(f.m, "action").lower() == "skipped" or f.m.assertion == Assertion.NEGATED \
            or bool(NOT_NEEDED.search(f.quote))
        if not not_taken or DISCARDED.search(f.quote) or STOP_IDIOM.search(f.quote):
            return None
        return Verdict(NCR, Cat.MEDICATION, "med-prn-not-needed",
                       explanation=f"{_short(f.match.active[0])} is ordered as needed.").cite(*f.match.active)

    def _med_stopped(self, f: MedFacts) -> Verdict | None:
        if f.action != "stopped":
            return None
        if f.match.active:
            sev, safe = self._class_sev(self._entry_classes(f.ctx, f.match.active), "stop", ("medium", False))
            v = Verdict(CONTRA, Cat.MEDICATION, "med-stopped-active", sev, safe,
                        f"Record lists {_short(f.match.active[0])} as active; patient reports stopping or not taking it.")
            return v.cite(*f.match.active, *self._indications(f.ctx, self._entry_classes(f.ctx, f.match.active))[:2])
        if f.match.historical:
            return Verdict(AGREE, Cat.MEDICATION, "med-stopped-agrees",
                           explanation=f"Record also shows {_short(f.match.historical[0])} as stopped.").cite(*f.match.historical)
        return self._careplan_or(f.m, f.ctx, Verdict(NCR, Cat.MEDICATION, "med-stopped-unknown",
                                                     explanation="Stopped a medicine the record does not list."))

    def _med_dose_changed(self, f: MedFacts) -> Verdict | None:
        if f.action not in ("less", "more", "changed") or not f.match.active:
            return None
        sev, safe = self._class_sev(self._entry_classes(f.ctx, f.match.active), "change", ("medium", False))
        word = {"less": "taking less than prescribed (e.g. half a tablet)", "more": "taking more than prescribed"}.get(f.action, "taking a different dose")
        v = Verdict(CONTRA, Cat.MEDICATION, f"med-dose-{f.action}", sev, safe,
                    f"Record lists {_short(f.match.active[0])} ({f.match.active[0].detail or 'as prescribed'}); patient reports {word}.")
        return v.cite(*f.match.active, *self._indications(f.ctx, self._entry_classes(f.ctx, f.match.active))[:2])

    def _med_borrowed_beside_own_order(self, f: MedFacts) -> Verdict | None:
        if not (f.match.active and f.someone_else):
            return None
        v = Verdict(GAP, Cat.MEDICATION, "med-undocumented-someone-else", "medium", False,
                    f"Patient reports taking someone else's {f.label}; the record's own order is {_short(f.match.active[0])}.")
        return v.cite(*f.match.active)

    def _med_schedule_differs(self, f: MedFacts) -> Verdict | None:
        """Taking an active order on another schedule than its dosageInstruction says: fewer doses (some days a week,
        one of two daily doses, when remembered), more (a weekly drug every day), or at another time or with food."""
        if not f.match.active or f.action not in ("taking", "took_once", "resumed") or f.someone_else \
                or f.m.assertion != Assertion.AFFIRMED:
            return None
        said = self._said_about(f)
        for entry in f.match.active:
            conflict = schedule_conflict(entry, said)
            if conflict is None:
                continue
            v = self._schedule_verdict(f, entry, conflict)
            flag = self._red_flag_verdict(f.m, f.ctx, f.quote, only_classes=self._entry_classes(f.ctx, [entry]))
            if flag is not None and flag.kind in (CONTRA, GAP):
                # the same words are a red flag too ("a weekly pill every day"): the finding carries its weight
                v.raise_to(flag.severity, flag.safety)
                v.cite(*flag.cites)
                v.explanation = f"{v.explanation} {flag.explanation}"
            return v
        return None

    def _schedule_verdict(self, f: MedFacts, entry: ClinicalEntry, conflict: ScheduleConflict) -> Verdict:
        classes = self._entry_classes(f.ctx, [entry])
        if conflict.action == "timing":
            sev, safe = "medium", False  # a dose at the wrong time or with food: absorption and effect, rarely acute harm
        else:
            sev, safe = self._class_sev(classes, "change", ("medium", False))
        if conflict.action == "more" and conflict.ratio >= 4:
            sev, safe = "high", True  # a weekly drug taken daily: a several-fold overdose (ISMP weekly dosing errors)
        v = Verdict(CONTRA, Cat.MEDICATION, f"med-schedule-{conflict.action}", sev, safe,
                    f"Record lists {_short(entry)} ({entry.detail or 'as prescribed'}); patient reports {conflict.said}.")
        return v.cite(entry, *self._indications(f.ctx, classes)[:2])

    def _said_about(self, f: MedFacts) -> str:
        """The patient's words about this drug: the clauses from one naming it up to one naming another drug, across
        its turns ("the thyroid one. only when I remember." is one statement; "and the other pill with food" is not).
        A quote that names no drug (the extractor linked it: "take it every morning") speaks of this drug."""
        names = {d.name for d in f.mention.drugs} | f.mention.raw_names
        quote = regex_text(f.m.quote)
        units = [u for turn_id in f.m.turn_ids for u in _clauses(f.ctx.turn_text.get(turn_id, ""))]
        if not any(u in quote for u in units):
            units = _clauses(f.m.quote) + units
        # a drug named after "with" is taken alongside ("at bedtime with my calcium chews"): the topic stays this drug
        named = [{d.name for d in drugs_in_text(_WITH_PHRASE.sub("", u), self.kb, fuzzy=False).drugs} | _raw_names_in(u, names)
                 for u in units]
        implicit = not any(n & names for n in named)
        parts, current = [], False
        for unit, found in zip(units, named):
            if found:
                current = bool(found & names) and not found - names
            elif implicit and unit in quote:
                current = True
            if current and unit not in parts:
                parts.append(unit)
        return " ".join(parts)

    def _med_resumed_after_gap(self, f: MedFacts) -> Verdict | None:
        """An active order restarted after a stretch without it ("five days without it, restarted it Sunday"): the
        record does not know of the interruption, which matters for drugs that must not be stopped abruptly."""
        if f.action != "resumed" or not f.match.active or f.m.assertion != Assertion.AFFIRMED:
            return None
        if not INTERRUPTION.search(regex_text(f.ctx.around(f.m)) + " " + f.quote):
            return None
        classes = self._entry_classes(f.ctx, f.match.active)
        sev, safe = self._class_sev(classes, "change", ("medium", False))
        v = Verdict(CONTRA, Cat.MEDICATION, "med-interrupted", sev, safe,
                    f"Record lists {_short(f.match.active[0])} as active; patient reports an interruption before restarting it.")
        return v.cite(*f.match.active, *self._indications(f.ctx, classes)[:2])

    def _med_active_order(self, f: MedFacts) -> Verdict | None:
        """Taking what the record orders: agreement, unless the stated strength is not the ordered one."""
        if not f.match.active:
            return None
        mismatch = _dose_mismatch(f.m, f.match.active)
        if mismatch is not None:
            entry, said = mismatch
            sev, safe = self._class_sev(self._entry_classes(f.ctx, [entry]), "change", ("medium", False))
            v = Verdict(CONTRA, Cat.MEDICATION, "med-dose-mismatch", sev, safe,
                        f"Record lists {_short(entry)} ({entry.detail or 'as prescribed'}); patient reports {said:g} mg.")
            return v.cite(entry, *self._indications(f.ctx, self._entry_classes(f.ctx, [entry]))[:1])
        return Verdict(AGREE, Cat.MEDICATION, "med-active-agrees", explanation=f"Record lists {_short(f.match.active[0])} as active.").cite(*f.match.active)

    def _med_past_mention(self, f: MedFacts) -> Verdict | None:
        """A passing mention of a drug the record shows as stopped or completed ("the amoxicillin they gave me")."""
        if not f.match.historical or f.match.by_class_only or CURRENT_USE.search(regex_text(f.ctx.around(f.m))) \
                or f.action in ("started", "resumed"):
            return None
        return Verdict(NCR, Cat.MEDICATION, "med-historical-mention",
                       explanation="Mentions a past medicine; no current use stated.").cite(*f.match.historical)

    def _med_not_in_active_record(self, f: MedFacts) -> Verdict:
        """Taking a drug with no active order: a stopped one restarted, a voided entry, or an undocumented drug;
        then its interactions with the record and any care-plan restriction it runs into."""
        interactions = self._interactions(f.ctx, f.classes, f.mention.drugs)
        v = self._med_restarted_or_voided(f) or self._med_new_use(f, interactions)
        if v.kind == NCR:
            return v
        for sev, safe, why, partners in interactions:
            v.raise_to(sev, safe)
            v.cite(*partners[:3])
            if why not in v.explanation:
                v.explanation = f"{v.explanation} Interaction: {why}."
        return self._careplan_or(f.m, f.ctx, v)

    # ---- parts of the last rule --------------------------------------------------------------------------

    def _med_restarted_or_voided(self, f: MedFacts) -> Verdict | None:
        if f.match.by_class_only:
            return None
        if f.match.historical:
            sev, safe = self._class_sev(f.classes, "new", ("low", False))
            v = Verdict(CONTRA, Cat.MEDICATION, "med-taking-stopped", sev, safe,
                        f"Record shows {_short(f.match.historical[0])} as {f.match.historical[0].status}; patient reports taking it.")
            return v.cite(*f.match.historical)
        if f.match.error:
            sev, safe = self._class_sev(f.classes, "new", ("medium", False))
            v = Verdict(GAP, Cat.MEDICATION, f"{ERROR_RULE_PREFIX}med-only-entry", sev, safe,
                        f"Patient reports taking {f.label}; its only record entry ({_short(f.match.error[0])}) is marked entered-in-error.")
            v.cite(*f.match.error)
            return v.cite(*self._indications(f.ctx, f.classes, f.m.quote)[:3])
        return None

    def _med_new_use(self, f: MedFacts, interactions: list) -> Verdict:
        quiet = self._med_quiet_new_use(f, interactions)
        if quiet is not None:
            return quiet
        m, ctx = f.m, f.ctx
        replaced = self._med_replaced(f)
        if replaced is not None:
            return replaced
        sev, safe = self._class_sev(f.classes, "new", ("medium", False))
        if f.someone_else:
            sev = _severity_max(sev, "medium")
        who = "someone else's prescription" if f.someone_else else ("an undocumented medicine or supplement")
        v = Verdict(GAP, Cat.MEDICATION, "med-undocumented-someone-else" if f.someone_else else "med-undocumented", sev, safe,
                    f"Patient reports taking {f.label} ({who}); the record has no entry for it.")
        v.cite(*ctx.idx.meds_sharing_ingredient(f.mention.drugs))
        v.cite(*self._indications(ctx, f.classes, m.quote + " " + _attr(m, "reason"))[:4])
        v.cite(*ctx.idx.meds_of_classes(f.classes - BROAD_CLASSES)[:2])  # therapeutic duplication: the same class on record
        self._cite_new_medicine_rule(v, ctx)
        v.cite(*self._context_conditions(ctx, ctx.around(m) + " " + _attr(m, "reason"))[:3])
        return v

    def _med_replaced(self, f: MedFacts) -> Verdict | None:
        """A new medicine said to replace one the record still lists as active ("took away my X and gave me Y",
        "switched me from X to Y", "X is gone, now it's Y"): the record's order is out of date, a contradiction. The
        replaced order is one the memory's turns name, else the one active order of the new drug's own class."""
        if f.someone_else or f.action == "stopped" or not f.mention.drugs:
            return None
        turns = regex_text(f.ctx.around(f.m)) + " " + f.quote
        if not REPLACED.search(turns) or HYPOTHETICAL_CHANGE.search(turns) or not FIRST_PERSON_ANY.search(turns):
            return None  # "there's a shot instead of the pills, I might ask": a change considered, not made
        new = {d.name for d in f.mention.drugs}
        normed = f" {norm(turns)} "
        # the record's active orders named in the turns by any of their names (the tables may not know the drug)
        orders = [me.entry for me in f.ctx.idx.meds if me.entry.state == State.ACTIVE and not me.names & new
                  and any(len(n) >= 4 and f" {n} " in normed for n in me.names)]
        if not orders:
            own = set().union(*(self.kb.drug_classes(d) for d in f.mention.drugs)) - BROAD_CLASSES
            same = f.ctx.idx.meds_of_classes({c for c in own if self.kb.classes.get(c) and self.kb.classes[c].change[0]})
            orders = same if len(same) == 1 else []
        if not orders:
            return None
        classes = self._entry_classes(f.ctx, orders)
        sev, safe = self._class_sev(classes | f.classes, "change", ("medium", False))
        v = Verdict(CONTRA, Cat.MEDICATION, "med-replaced", sev, safe,
                    f"Record lists {_short(orders[0])} as active; patient reports it was replaced by {f.label}.")
        return v.cite(*orders, *self._indications(f.ctx, classes)[:2])

    def _med_quiet_new_use(self, f: MedFacts, interactions: list) -> Verdict | None:
        """New use that is not worth a reviewer's look: a lay class alone, a plan, an occasional or single OTC dose."""
        if f.match.by_class_only and f.action != "started":
            # "my water pill" with no matching active entry: a lay class name alone is too vague to call a gap; a new
            # prescription named by its class ("urgent care gave me a cough syrup") is news even so
            return Verdict(NCR, Cat.MEDICATION, "med-class-only", explanation="A drug class was named; no specific drug to check.")
        otc = bool(f.classes) and f.classes <= (OTC_CLASSES | {"nsaid_like"})
        turn = regex_text(f.ctx.around(f.m)) + " " + f.quote
        if f.action == "taking" and not f.someone_else and GENERAL_CLAIM.search(f.quote) and not FIRST_PERSON_ANY.search(turn) \
                and not REGULAR.search(turn) and not COUNT_PER_PERIOD.search(turn) and not MG.search(turn) \
                and not _attr(f.m, "frequency"):
            # "X cures all ills", "a video says X fixes it": a general claim, no use by the patient said in
            # the memory's turns (a first-person word, a schedule or a dose anywhere in them is a report of use)
            return Verdict(NCR, Cat.MEDICATION, "med-general-claim", explanation=f"A general statement about {f.label}; no use stated.")
        if MODAL_START.search(f.quote) and f.action != "stopped":
            return Verdict(NCR, Cat.MEDICATION, "med-considering", explanation="Considering a medicine; nothing taken yet.")
        if otc and not f.someone_else and not interactions and OCCASIONAL.search(f.quote):
            return Verdict(NCR, Cat.MEDICATION, "med-otc-occasional", explanation=f"Occasional over-the-counter {f.label}.")
        if f.action == "took_once" and otc and not f.someone_else:
            # a single over-the-counter dose is coaching material, even where a habit of it would conflict
            return Verdict(NCR, Cat.MEDICATION, "med-otc-once", explanation=f"A single dose of over-the-counter {f.label}.")
        return None

    def _allergen_taken(self, m: MemoryDraft, ctx: Context, mention: DrugMention, action: str) -> Verdict | None:
        if action in ("stopped",) or not mention.drugs:
            return None
        hits = [ae for ae in ctx.idx.allergy_matches(set(), mention.drugs)]
        active = [ae.entry for ae in hits if ae.entry.state == State.ACTIVE]
        if not active:
            return None
        quote = regex_text(m.quote + " " + _attr(m, "reaction"))
        anaphylaxis = any(f.id == "anaphylaxis" and f.matches(quote) for f in self.kb.red_flags)
        reaction = _attr(m, "reaction") or any(f.id in ("rash", "anaphylaxis") and f.matches(quote) for f in self.kb.red_flags)
        if reaction and not TOLERATED.search(quote):
            v = Verdict(CONTRA, Cat.ALLERGY, "allergy-listed-allergen-reaction", "high" if anaphylaxis else "medium", anaphylaxis,
                        f"Record lists an active allergy ({_short(active[0])}); patient took a related drug and reacted.")
        else:
            v = Verdict(CONTRA, Cat.ALLERGY, "allergy-tolerated", Severity.LOW, False,
                        f"Record lists an active allergy ({_short(active[0])}); patient reports taking a related drug without a reaction.")
        orders = ctx.idx.match_meds(mention)
        return v.cite(*active, *orders.active, *orders.historical)

    def _device_stopped(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """Taking off or disconnecting the device an active order is delivered by ("took my pump off") stops that drug."""
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not DEVICE_OFF.search(quote) or BRIEF_DISCONNECT.search(quote):
            return None
        for cls in self.kb.classes.values():
            for device in cls.devices:
                if not re.search(rf"\b{re.escape(device)}s?\b", quote):
                    continue
                orders = [e for e in ctx.idx.meds_of_classes({cls.id}) if re.search(rf"\b{re.escape(device)}", _order_text(e))]
                if not orders:
                    continue
                sev, safe = cls.stop
                v = Verdict(CONTRA, Cat.MEDICATION, f"med-device-off-{cls.id}", sev, safe,
                            f"Record has {_short(orders[0])} delivered by {device}; patient reports taking the {device} off.")
                v.cite(*orders)
                v.cite(*self._indications(ctx, {cls.id}, m.quote)[:2])
                return v
        return None


def _dose_mismatch(m: MemoryDraft, active: list[ClinicalEntry]) -> tuple[ClinicalEntry, float] | None:
    """A single-ingredient active order whose strength (or prescribed dose) differs from the mg the patient states."""
    said = [float(x) for x in MG.findall(regex_text(" ".join([m.quote, _attr(m, "dose_text")])))]
    if not said:
        return None
    for entry in active:
        strengths = [float(x) for x in RECORD_MG.findall(entry.display)]
        if len(strengths) != 1 or "/" in entry.display:
            continue
        allowed = {strengths[0]}
        for count in TABLETS.findall(entry.detail):
            allowed.add(strengths[0] * WORD_NUM.get(count.lower(), float(count) if count[0].isdigit() else 1.0))
        allowed |= {float(x.replace(",", "")) for x in re.findall(r"\(([\d,]+(?:\.\d+)?) ?mg", entry.detail, re.IGNORECASE)}
        for value in said:
            if all(abs(value - a) > 1e-6 for a in allowed):
                return entry, value
    return None


def _usual_amount(quote: str, mention: DrugMention, active: list[ClinicalEntry]) -> bool:
    """The amount said just before the drug's name ("half a <drug>", "two of the <drug>s") is the number of tablets
    the active order prescribes, and nothing marks it as a change: the usual dose said in passing, not a cut."""
    if not active or AMOUNT_CHANGE.search(quote):
        return False
    ordered = {_amount(m.group(1)) for e in active for m in _ORDER_TABLETS.finditer(f"{e.detail} {_order_text(e)}")}
    if not ordered:
        return False
    names = sorted({d.name for d in mention.drugs} | {a for d in mention.drugs for a in d.aliases} | mention.raw_names,
                   key=len, reverse=True)
    for name in names:
        for hit in re.finditer(rf"\b{re.escape(name)}", quote):
            said = STATED_AMOUNT.search(quote[max(0, hit.start() - 40) : hit.start()])
            if said is not None:
                return _amount(said.group(1)) in ordered
    return False


def _amount(word: str) -> float:
    word = word.lower()
    return _AMOUNT_WORDS[word] if word in _AMOUNT_WORDS else float(word)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in CLAUSE_SPLIT.split(regex_text(text)) if c and c.strip()]


def _raw_names_in(unit: str, names: set[str]) -> set[str]:
    """Drug names the tables do not know (the record's first word, the extractor's word) said in a clause."""
    words = set(norm(unit).split())
    return {n for n in names if " " not in n and n in words}


_PURPOSE_PHRASE = re.compile(r"\b(?:the\s+)?(pills?|medicines?|meds?|medications?|tablets?|shots?)\s+for\s+"
                             r"(?:(?:my|the|his|her|your|our|their)\s+)?([a-z]+(?:\s+[a-z]+)?)")


def _purpose_compounds(quote: str, kb: Knowledge) -> str:
    """The quote with "the pill for my sugar" read as "sugar pill" (English paraphrases a noun compound "X N" as
    "N for X"; Levi 1978), when the compound is a lay class the tables know; otherwise unchanged ("the pill for her
    acne" stays the Pill)."""
    def compound(m: re.Match) -> str:
        words = m.group(2).split()
        for purpose in (" ".join(words), words[0]):
            for form in (m.group(1), m.group(1).removesuffix("s")):
                for name in dict.fromkeys((purpose, purpose.removesuffix("s"))):
                    term = f"{name} {form}"
                    if drugs_in_text(term, kb, fuzzy=False).lay_classes:
                        return term + m.group(0)[m.group(0).find(purpose) + len(purpose):]
        return m.group(0)
    return _PURPOSE_PHRASE.sub(compound, regex_text(quote)) if " for " in regex_text(quote) else quote


def _drug_clause(quote: str, kb: Knowledge) -> str:
    """The one clause of the quote that names a drug, when exactly one drug is named in the whole quote."""
    if len(drugs_in_text(quote, kb).drugs) != 1:
        return ""
    clauses = [c for c in CLAUSE_SPLIT.split(regex_text(quote)) if c and c.strip()]
    hits = [c for c in clauses if drugs_in_text(c, kb).drugs]
    return hits[0] if len(hits) == 1 else ""


# The decision order of a medication memory: the first rule that returns a verdict decides.
MEDICATION_ORDER = (
    MedicationRules._med_schedule_differs,
    MedicationRules._med_red_flag_in_use,
    MedicationRules._med_historical,
    MedicationRules._med_listed_allergen,
    MedicationRules._med_as_needed_not_taken,
    MedicationRules._med_stopped,
    MedicationRules._med_dose_changed,
    MedicationRules._med_borrowed_beside_own_order,
    MedicationRules._med_resumed_after_gap,
    MedicationRules._med_active_order,
    MedicationRules._med_past_mention,
    MedicationRules._med_not_in_active_record,
)


def _possession_retracted(m: MemoryDraft, ctx: Context) -> bool:
    """The turn goes straight on from the quote with a repair of its possessor ("my inhaler - well, not mine, ..."): the
    words right after the quote, where a same-turn self-repair sits (Schegloff, Jefferson and Sacks 1977)."""
    quote = regex_text(m.quote).strip()
    for turn_id in m.turn_ids:
        turn = regex_text(ctx.turn_text.get(turn_id, ""))
        at = turn.find(quote) if quote else -1
        if at != -1 and POSSESSION_RETRACTED.search(turn[at + len(quote):at + len(quote) + 80]):
            return True
    return False
