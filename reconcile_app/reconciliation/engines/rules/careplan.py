"""Care-plan memories: restrictions, abandoned therapies, lapsed activities and diets, read from the plan's own text."""
from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import (
    careplan_activities, careplan_text as careplan_text_of, concepts_in_text, drugs_in_text, expand_activity_words,
    procedures_in_text, stems,
)
from reconcile_app.reconciliation.types import SEVERITY_RANK, Severity
from reconcile_app.terminology.lexicon import ALIASES_PATH

from .cues import DIET_GENERIC, DIET_LAPSE, DIET_NAME, HEDGED, NEW_MEDICINE_RULE, STOP
from .cues import pattern as cue_pattern_of
from .cues import words as cue_words
from .immunization import committed_plan
from .plantext import (
    PlanItem, ambiguous_for, disuse_in, done_by_patient, habit_in, intake_in, item_active, mentions, number_value, plan_items, quantities,
    vocabulary,
)
from .verdict import CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _clip


class CarePlanRules:
    """Care-plan memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _careplan_or(self, m: MemoryDraft, ctx: Context, v: Verdict) -> Verdict:
        """Add a documented care-plan restriction the memory runs into (a gap becomes a contradiction)."""
        conflict = self._restriction_hit(m, ctx)
        if conflict is None:
            return v
        careplan, clause = conflict
        if v.kind == NCR:
            v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-restriction", Severity.LOW, False, f"The care plan restricts {_clip(clause, 120)}; the patient reports doing it.")
        elif v.kind == GAP:
            v.kind = CONTRA
            v.rule = f"{v.rule}+careplan"
            v.explanation = f"{v.explanation} The care plan restricts it ({_clip(clause, 80)})."
        if all((c.resource_type, c.id) != (careplan.resource_type, careplan.id) for c in v.cites):
            v.cites.insert(1 if v.cites else 0, careplan)  # the restricting plan right after what it is about
        self._protected_drug(v, clause, ctx)
        return v

    def _cite_new_medicine_rule(self, v: Verdict, ctx: Context) -> None:
        """A plan that says to check before starting any new medicine or supplement is what an undocumented one runs into."""
        for entry, _ in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for activity in careplan_activities(entry):
                text = regex_text(activity)
                if NEW_MEDICINE_RULE.search(text):
                    v.cite(entry)
                    for row in self.kb.protected_classes:  # and the drug that rule protects (warfarin, a transplant drug)
                        if any(f" {norm(t).strip()} " in f" {norm(activity)} " for t in row["terms"]) or any(
                                f" {norm(t).strip()} " in f" {norm(careplan_text_of(entry))} " for t in row["terms"]):
                            v.cite(*ctx.idx.meds_of_classes({row["class"]})[:1])
                    return

    def _protected_drug(self, v: Verdict, clause: str, ctx: Context) -> None:
        """A restriction that guards an active high-risk drug (vitamin K with warfarin) is a safety matter: raise and cite the drug."""
        text = f" {norm(clause)} "
        classes = {row["class"] for row in self.kb.protected_classes if any(f" {norm(t).strip()} " in text for t in row["terms"])}
        for d in drugs_in_text(clause, self.kb, fuzzy=False).drugs:
            classes |= self.kb.drug_classes(d)
        for row in self.kb.protected_classes:
            if row["class"] not in classes:
                continue
            meds = ctx.idx.meds_of_classes({row["class"]})
            if meds:
                v.raise_to(row["severity"], bool(row["safety"]))
                v.cite(*meds[:2])
                v.explanation += f" The plan guards {self.kb.classes[row['class']].label} therapy."
                return

    def _restriction_hit(self, m: MemoryDraft, ctx: Context) -> tuple[ClinicalEntry, str] | None:
        if m.assertion != Assertion.AFFIRMED or not ctx.idx.restrictions():
            return None  # (a record without restrictions: the memory's words are not read at all)
        words = stems(expand_activity_words(m.quote, self.kb))
        if STOP.search(regex_text(m.quote)) or _NONE_SINCE.search(regex_text(m.quote)):
            return None  # "quit", "not a single drink since": the restriction kept, not broken
        quote = regex_text(m.quote)
        for restriction in ctx.idx.restrictions():
            if restriction.soft and not any(p.search(quote) for p in self.kb.excess):
                continue  # "limit alcohol": a drink is not a conflict, a habit of several is
            for phrase in restriction.phrases:
                if stems(phrase) <= words:
                    return restriction.careplan, restriction.text
        return None

    def _planned_plan_breach(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A committed plan to do what the care plan forbids or limits ("booked a ski week at 9,600 feet" under an
        altitude limit, "getting on the roof Saturday" under a no-heights rule): read as if done, and kept only when
        it breaches a forbidden or limited activity; a plan the patient will first clear with a clinician, or a
        conditional, stays a hypothetical (ConText hypothetical triggers; TimeML future modality)."""
        if m.category not in ("lifestyle", "care_activity") or not committed_plan(regex_text(m.quote)):
            return None
        handler = self._care_activity if m.category == "care_activity" else self._lifestyle
        verdict = handler(dataclasses.replace(m, assertion=Assertion.AFFIRMED), ctx)
        if verdict.kind != CONTRA or not verdict.rule.startswith(("careplan-forbidden", "careplan-limit")):
            return None
        verdict.rule = f"{verdict.rule}+planned"
        verdict.explanation = f"Planned: {verdict.explanation}"
        return verdict

    def _care_activity(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """In order: a delivery device taken off, an abandoned therapy, what the plan's own text asks or forbids (a
        device left unused, a limit exceeded, a forbidden activity, the foods of its diet), a lapsed plan activity, a
        restriction run into, a diet broken, a medicine named in the activity, a red flag; otherwise routine."""
        device = self._device_stopped(m, ctx)
        if device is not None:
            return device
        quote = regex_text(m.quote)
        stopped = (_attr(m, "action").lower() in ("stopped", "skipped") or bool(STOP.search(quote)) or m.assertion == Assertion.NEGATED
                   or any(p.search(quote) for p in self.kb.lapse))
        found = self._therapy_abandoned(m, ctx, stopped) or self._plan_conflict(m, ctx) or self._activity_lapse(m, ctx, stopped)
        if found is not None:
            return found
        if m.assertion in (Assertion.NEGATED, Assertion.HISTORICAL):
            return Verdict(NCR, Cat.CAREPLAN, "care-activity-negated")
        found = self._restriction_verdict(m, ctx) or self._diet_conflict(m, ctx)
        if found is not None:
            return found
        # a drug the quote names only inside a procedure ("a cortisone shot") is that procedure, not a medicine taken
        mention = drugs_in_text(" ".join([_attr(m, "name"), m.quote]), self.kb, fuzzy=False)
        if mention.drugs and any(c not in ("supplement",) for d in mention.drugs for c in self.kb.drug_classes(d)) \
                and not procedures_in_text(m.quote, self.kb):
            return self._medication(m, ctx)
        flag = self._red_flag_verdict(m, ctx, quote)
        if flag is not None:
            return flag
        return Verdict(NCR, Cat.CAREPLAN, "care-activity", explanation="Routine care activity; nothing conflicts with the record.")

    def _therapy_abandoned(self, m: MemoryDraft, ctx: Context, stopped: bool) -> Verdict | None:
        """A prescribed therapy (CPAP, dialysis, rehab) the patient stopped, named in any order or inflection."""
        if not stopped or m.assertion == Assertion.HISTORICAL:
            return None
        quote = regex_text(m.quote)
        quote_stems = stems(set(norm(m.quote).split()))

        def longest(therapy) -> int:  # "cardiac rehab" is cardiac rehab before it is any rehab
            return max((len(t) for t in therapy.terms if stems(set(norm(t).split())) <= quote_stems), default=0)

        for therapy in sorted(self.kb.therapies, key=lambda t: -longest(t)):
            if longest(therapy) == 0:
                continue
            plans = ctx.idx.careplans_mentioning(therapy.terms)
            conds = ctx.idx.conditions_for(set(therapy.conditions))
            if not plans and not conds:
                continue
            if SEVERITY_RANK[therapy.severity] < SEVERITY_RANK[Severity.MEDIUM] and HEDGED.search(quote):
                continue  # "kinda stopped my PT exercises": coaching material, not a care-plan conflict
            if any(_near(quote, t, _COMPLETED) for t in therapy.terms):
                continue  # "rehab ended in the fall": the program ran its course
            v = Verdict(CONTRA, Cat.CAREPLAN, f"careplan-therapy-abandoned-{therapy.id}", therapy.severity, therapy.safety,
                        f"Care plan includes {therapy.terms[0]}; patient reports stopping it ({therapy.why}).")
            v.cite(*plans, *conds)
            flag = self._red_flag_verdict(m, ctx, regex_text(ctx.session_text))
            if flag is not None and flag.rule == "redflag-drowsy-driving":
                v.raise_to(flag.severity, flag.safety)
            return v
        return None

    def _restriction_verdict(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """Doing what the plan restricts; a restriction that guards a drug or meets an interaction is raised."""
        hit = self._restriction_hit(m, ctx)
        if hit is None:
            return None
        careplan, clause = hit
        v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-restriction", Severity.LOW, False,
                    f"The care plan restricts {_clip(clause, 120)}; the patient reports doing it.")
        v.cite(careplan)
        v.cite(*ctx.idx.conditions_for({c for c in concepts_in_text(careplan_title(careplan), self.kb)}))
        v.cite(*_addressed(ctx, careplan)[:2])
        self._protected_drug(v, clause, ctx)
        mention = drugs_in_text(" ".join([_attr(m, "name"), m.content, m.quote]), self.kb, fuzzy=False)
        if mention.drugs:
            for sev, safe, why, partners in self._interactions(ctx, self._mention_classes(mention), mention.drugs):
                v.raise_to(sev, safe)
                v.cite(*partners[:3])
                v.explanation += f" Interaction: {why}."
        return v

    def _activity_lapse(self, m: MemoryDraft, ctx: Context, stopped: bool) -> Verdict | None:
        """A prescribed care-plan activity the patient says they stopped (beyond the therapies table).

        Exercise and routine words are exempt: a skipped walk is coaching material, not a plan conflict.
        """
        quote = regex_text(m.quote)
        if not stopped or m.assertion == Assertion.HISTORICAL or HEDGED.search(quote):
            return None
        # a word shared with the instruction must name its activity: "every morning" or "with food" names none
        exempt = stems(set(self.kb.lapse_exempt)) | stems(set(_LAPSE_GENERIC))
        words = {w for w in stems(set(norm(m.quote).split())) if len(w) >= 4} - exempt - self._symptom_words(quote)
        for entry, _ in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for activity in careplan_activities(entry):
                lowered = regex_text(activity)
                if not any(re.search(rf"\b{re.escape(v.strip())}\b", lowered) for v in self.kb.imperatives):
                    continue
                act_words = {w for w in stems(set(norm(activity).split())) if len(w) >= 4} - exempt
                shared = words & act_words
                if shared:
                    return Verdict(CONTRA, Cat.CAREPLAN, "careplan-activity-lapse", Severity.LOW, False,
                                   f"The care plan asks: {_clip(activity, 100)}; the patient reports stopping it.").cite(entry)
        return None

    def _symptom_words(self, quote: str) -> set[str]:
        """The words of the symptoms the quote speaks of, said or denied (the red-flag table's lay words): a plan names
        symptoms as what to call about ("chest pain: take one nitroglycerin"), so "no chest pain since" or "no fever"
        shares its words without stopping anything the plan asks."""
        spans = [hit.span() for flag in self.kb.red_flags for hit in flag.hits(quote)]
        said = {w for start, end in spans for w in norm(quote[start:end]).split()}
        normed = f" {norm(quote).strip()} "
        said |= {w for term in _symptom_terms() if f" {term} " in normed for w in term.split()}
        return stems(said)

    def _diet_lapse(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A documented diet the patient names and says they are not keeping ("cheating on my low-sodium diet")."""
        quote = regex_text(m.quote)
        if m.assertion != Assertion.AFFIRMED or not DIET_LAPSE.search(quote):
            return None
        words = set(re.findall(r"[a-z]+", quote))
        for entry, text in ctx.idx.careplans:
            if entry.state != State.ACTIVE:
                continue
            for phrase in DIET_NAME.findall(regex_text(text)):
                named = [w for w in re.findall(r"[a-z]+", phrase) if w not in DIET_GENERIC]
                if named and named[-1] in words:  # the word that names the diet: "gluten", "sodium", "renal"
                    v = Verdict(CONTRA, Cat.CAREPLAN, "careplan-diet-lapse", Severity.LOW, False,
                                f"Care plan documents a {phrase.strip()}; patient reports not keeping to it.")
                    v.cite(entry)
                    v.cite(*_addressed(ctx, entry)[:2])
                    return v
        return None

    def _diet_conflict(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A habitual food or drink against a documented diet (a low-salt plan and fast food every day); first what the
        plan's own text asks or forbids, which a lifestyle memory also meets ("it's been in the closet since May"), and
        for a lifestyle memory a procedure or vaccine named in chatter (the last hook lifestyle.py calls)."""
        planned = self._plan_conflict(m, ctx)
        if planned is not None:
            return planned
        if m.category == "lifestyle":
            named = self._procedure_in_chatter(m, ctx) or self._vaccine_in_chatter(m, ctx)
            if named is not None:
                return named
        if m.assertion != Assertion.AFFIRMED:
            return None
        lapse = self._diet_lapse(m, ctx)
        if lapse is not None:
            return lapse
        quote = regex_text(m.quote)
        if not any(p.search(quote) for p in self.kb.excess) or STOP.search(quote):
            return None
        normed = norm(m.quote)
        for row in self.kb.diet_conflicts:
            if not any(f" {norm(t).strip()} " in normed for t in row["members"]):
                continue
            plans = ctx.idx.careplans_mentioning(row["plan_terms"])
            if plans:
                v = Verdict(CONTRA, Cat.CAREPLAN, f"careplan-diet-{row['id']}", row["severity"], bool(row["safety"]),
                            "Patient reports a habit that goes against the documented diet in the care plan.")
                return v.cite(plans[0])
        return None


    # --- the plan's own text (plantext.py): devices, forbidden activities, limits, the foods of a diet -----------

    def _plan_conflict(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """What the patient says against the plan's own instructions, in order: a device it asks for left unused, an
        amount over a limit it sets, an activity or food it forbids, the foods of its diet, a change it asks to avoid."""
        if m.assertion not in (Assertion.AFFIRMED, Assertion.NEGATED):
            return None
        items = tuple(i for i in plan_items(ctx.idx) if item_active(i, m.mention_time))
        if not items:
            return None
        for rule in (self._device_unused, self._limit_exceeded, self._forbidden, self._diet_foods):
            found = rule(m, ctx, items)
            if found is not None:
                return found
        return None

    def _device_unused(self, m: MemoryDraft, ctx: Context, items: tuple[PlanItem, ...]) -> Verdict | None:
        """A device the plan asks the patient to use, said to be unused: stored away, never opened, expired, gone without."""
        uses = [i for i in items if i.mode == "use"]
        if not uses:
            return None
        concepts, reading = vocabulary()
        ambiguous = ambiguous_for(tuple(uses))
        allowed = {i.concept for i in uses}
        own = mentions(m.quote, allowed, ambiguous)
        around = ctx.around(m)

        def names_device(text: str) -> bool:
            return bool(mentions(text, allowed, ambiguous))

        if not (own or disuse_in(m.quote, reading, lambda _: True)) or not disuse_in(around, reading, names_device):
            return None
        named = own or mentions(around, allowed, ambiguous)
        item = next((i for i in uses if i.concept in named), None)
        if item is None:
            return None
        concept = concepts[item.concept]
        return self._plan_verdict(item, ctx, f"careplan-device-unused-{concept.id}",
                                  f"The care plan asks: {_clip(item.clause, 110)}; the patient reports not using it ({concept.why}).")

    def _limit_exceeded(self, m: MemoryDraft, ctx: Context, items: tuple[PlanItem, ...]) -> Verdict | None:
        """An amount over the plan's own number: drinks a day, pounds lifted, feet of altitude, ounces of fluid."""
        if m.assertion != Assertion.AFFIRMED:
            return None
        limits = [i for i in items if i.mode == "limit" and i.limit is not None]
        if not limits:
            return None
        concepts, reading = vocabulary()
        own = done_by_patient(m.quote, {i.concept for i in limits})
        for item in limits:
            if item.concept not in own:
                continue
            concept = concepts[item.concept]
            said = _amount_said(concept.unit, regex_text(m.quote), regex_text(ctx.around(m)))
            if said is None or said <= item.limit + 1e-6:
                continue
            return self._plan_verdict(item, ctx, f"careplan-limit-{concept.id}",
                                      f"The care plan limits it: {_clip(item.clause, 110)}; the patient reports "
                                      f"{said:g} {_UNIT_WORDS.get(concept.unit, concept.unit)} ({concept.why}).")
        return None

    def _forbidden(self, m: MemoryDraft, ctx: Context, items: tuple[PlanItem, ...]) -> Verdict | None:
        """An activity, exposure or food the plan forbids outright, said as done (not denied, not only planned)."""
        if m.assertion != Assertion.AFFIRMED:
            return None
        concepts, reading = vocabulary()
        avoid = [i for i in items if i.mode == "avoid" and concepts[i.concept].kind != "food"
                 or i.mode == "avoid" and concepts[i.concept].id in _FORBIDDEN_FOODS]
        if not avoid:
            return None
        own = done_by_patient(m.quote, {i.concept for i in avoid})
        for item in avoid:
            if item.concept in own:
                concept = concepts[item.concept]
                return self._plan_verdict(item, ctx, f"careplan-forbidden-{concept.id}",
                                          f"The care plan forbids it: {_clip(item.clause, 110)}; the patient reports doing it ({concept.why}).")
        return None

    def _diet_foods(self, m: MemoryDraft, ctx: Context, items: tuple[PlanItem, ...]) -> Verdict | None:
        """The foods a plan's diet lists, eaten as a habit or several of them at once (a diet described by its foods);
        for a plan that asks to keep a food steady, a new daily habit of it."""
        if m.assertion != Assertion.AFFIRMED:
            return None
        concepts, reading = vocabulary()
        diet = [i for i in items if concepts[i.concept].kind == "food" and i.mode in ("avoid", "limit", "steady")]
        if not diet:
            return None
        own = done_by_patient(m.quote, {i.concept for i in diet})
        if not own:
            return None
        around = ctx.around(m)
        eaten = done_by_patient(around, {i.concept for i in diet}) | own
        for item in sorted(diet, key=lambda i: i.mode != "steady"):
            same_plan = {i.concept for i in diet if i.careplan.id == item.careplan.id and i.mode == item.mode}
            if item.concept not in own:
                continue
            if not (intake_in(m.quote, reading) or habit_in(m.quote, reading)):
                continue  # a menu planned or a list read out is not what the patient ate
            if item.mode == "steady":
                if not habit_in(around, reading, change=True):
                    continue
            elif len(eaten & same_plan) < 2 and not habit_in(m.quote, reading):
                continue
            foods = ", ".join(sorted(c.replace("_", " ") for c in eaten & same_plan))
            return self._plan_verdict(item, ctx, f"careplan-diet-foods-{item.mode}",
                                      f"The care plan's diet says: {_clip(item.clause, 110)}; the patient reports eating {foods}.")
        return None

    def _plan_verdict(self, item: PlanItem, ctx: Context, rule: str, explanation: str) -> Verdict:
        """The contradiction with the plan, citing the plan, what it addresses and the medicines its clause names; a
        clause that guards a high-risk drug (vitamin K with warfarin) raises it."""
        concepts, _ = vocabulary()
        concept = concepts[item.concept]
        v = Verdict(CONTRA, Cat.CAREPLAN, rule, concept.severity, concept.safety, explanation)
        v.cite(item.careplan)
        v.cite(*_addressed(ctx, item.careplan)[:2])
        v.cite(*ctx.idx.conditions_for(set(concept.conditions))[:1])
        v.cite(*ctx.idx.conditions_for(concepts_in_text(careplan_title(item.careplan), self.kb))[:1])
        named = drugs_in_text(item.clause, self.kb, fuzzy=False)
        if named.drugs:
            v.cite(*ctx.idx.match_meds(named).active[:2])
        # a plan written after a procedure ("After laparoscopic cholecystectomy") is about that procedure
        done = procedures_in_text(careplan_title(item.careplan), self.kb)
        v.cite(*[e for e, pids, _ in ctx.idx.procedures if pids & done][:1])
        self._protected_drug(v, item.clause, ctx)
        return v


_LAPSE_GENERIC = cue_words("lapse_shared_generic")


@lru_cache(maxsize=1)
def _symptom_terms() -> tuple[str, ...]:
    """The shared terminology's lay symptom terms (terminology/data/aliases.json, kind 'symptom'), normalized."""
    entries = json.loads(ALIASES_PATH.read_text(encoding="utf-8"))["entries"]
    return tuple(sorted({norm(e["term"]).strip() for e in entries if e.get("kind") == "symptom"} - {""}))
_NONE_SINCE = cue_pattern_of("none_since")
_COMPLETED = cue_pattern_of("program_completed")


def _near(text: str, term: str, cue: re.Pattern[str], words: int = 4) -> bool:
    """The cue is said within a few words of the term, on either side."""
    for hit in re.finditer(rf"\b{re.escape(norm(term).strip())}\b", text):
        before = " ".join(text[:hit.start()].split()[-words:])
        after = " ".join(text[hit.end():].split()[:words])
        if cue.search(before) or cue.search(after):
            return True
    return False
_FORBIDDEN_FOODS = {"raw_food", "low_salt_diet", "grapefruit", "thin_liquids"}  # foods a plan forbids outright, one is enough
_UNIT_WORDS = {"lb": "lb", "ft": "feet", "drink": "drinks", "oz": "oz of fluid"}


def _amount_said(unit: str, quote: str, around: str) -> float | None:
    """The largest amount the patient states in the concept's unit: in the quote, else in the rest of the turn; fluids
    as a daily volume (a size times a count a day: "the 28 oz ones, 2 or 3 a day")."""
    if unit == "oz":
        return _daily_volume(quote) or _daily_volume(around)
    for text in (quote, around):
        found = [v for v, _ in quantities(f" {text} ", unit)]
        if found:
            return max(found)
    return None


def _daily_volume(text: str) -> float | None:
    text = f" {text} "
    per_day = [v for v, per in quantities(text, "oz") if per == "day"]
    if per_day:
        return max(per_day)
    sizes = [v for v, _ in quantities(text, "oz")]
    count = re.search(r"\b(\d+|two|three|four|five|six)(?:\s*(?:or|-|to)\s*(\d+|two|three|four|five|six))?\s+(?:a|per|every)\s+day\b", text)
    if sizes and count:
        n = max(v for v in (number_value(count.group(1)), number_value(count.group(2) or "")) if v is not None)
        return max(sizes) * n
    return None


def _addressed(ctx: Context, careplan: ClinicalEntry) -> list[ClinicalEntry]:
    """The conditions a care plan says it addresses (its own references)."""
    out = []
    for ref in (careplan.raw or {}).get("addresses") or []:
        rtype, _, rid = str(ref.get("reference", "") if isinstance(ref, dict) else "").partition("/")
        entry = ctx.idx.record.get(rtype, rid) if rid else None
        if entry is not None and entry.state != State.ERROR:
            out.append(entry)
    return out


def careplan_title(entry: ClinicalEntry) -> str:
    return str((entry.raw or {}).get("title") or entry.display)
