"""The offline rules reconciler: each memory matched against the record through the shared terminology and the
curated knowledge tables, one module of small named rules per category.

Decision order for one memory (`RulesReconciler._judge`):
  1. subject: another person's fact is no clinical relevance (unless the quote speaks of the patient alone);
  2. assertion: hypothetical or uncertain statements are not reconciled, except a committed plan of a live vaccine the
     record contraindicates (immunization.py) or of an activity the care plan forbids or limits (careplan.py);
  3. pregnancy said in the quote (condition.py), before any category;
  4. drinking said with an alcohol use disorder in remission in the record (lifestyle.py), whatever the category;
     a red flag filed as chatter, when acute or made dangerous by the record (condition.py);
     (a red flag beside an unremarkable measurement is read the same way, after the measurement's rules);
  5. the category's own rules: medication.py, allergy.py, condition.py (also symptoms), observation.py, procedure.py,
     immunization.py, careplan.py (care activities), lifestyle.py;
  6. smoking and alcohol status (lifestyle.py) when the category found nothing;
then a discrepancy already raised from an earlier session is a repeat, and citations pass the gate.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion, MemoryDraft, Subject
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.knowledge import load_knowledge, regex_text
from reconcile_app.reconciliation.matching import RecordIndex
from reconcile_app.reconciliation.types import Citation, FindingDraft, Severity

from ..base import Reconciler
from ..judge import Judge
from .allergy import AllergyRules
from .careplan import CarePlanRules
from .citations import CitationRules
from .condition import ConditionRules
from .immunization import ImmunizationRules
from .lifestyle import LifestyleRules
from .medication import MedicationRules
from .observation import ObservationRules
from .procedure import ProcedureRules
from .cues import PREGNANT, PREGNANT_PAST
from .cues import pattern as cue_pattern_of
from .verdict import (
    CONTRA, Cat, Context, GAP, MAX_CITATIONS, MAX_EXPLANATION, NCR, REPEAT_WINDOW, Verdict, _CONCEPT_ATTRIBUTES,
    _elapsed, _only_the_patient_in, _record_category, _repeat_key, _sentences, _text,
)


# data/cues/cond_resolution.json: who was measured when another person helped ("she had me prick my finger")
MEASURED_ON_PATIENT = cue_pattern_of("measured_on_patient")
READING_OF_OTHER = cue_pattern_of("reading_of_other")


class RulesReconciler(CitationRules, MedicationRules, AllergyRules, ConditionRules, ObservationRules, ProcedureRules, ImmunizationRules, CarePlanRules, LifestyleRules, Reconciler):
    name = "rules"
    base_version = "2.5.0"  # bump whenever a rule's verdict can change: with the judge's fingerprint it keys run idempotency


    @property
    def version(self) -> str:  # type: ignore[override]
        return self.base_version if self.judge is None else f"{self.base_version}+{self.judge.version}"

    def __init__(self) -> None:
        self.kb = load_knowledge()
        self.judge: Judge | None = Judge.load()
        # earlier memories are judged again on every later session (for repeats): remember their keys, for one
        # record object at a time (a new record, or a changed one, starts afresh)
        self._past: dict[tuple, tuple[str, str, str] | None] = {}
        self._past_record: ClinicalRecord | None = None

    def reconcile(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        """The rules' verdicts through the citation gate, then the learned judge (when its model is shipped)."""
        drafts = [citation_gate(d, record) for d in self.reconcile_rules(memories, record, history=history)]
        return self.judge.apply(memories, drafts, record) if self.judge is not None else drafts

    def reconcile_rules(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        idx = RecordIndex(record, self.kb)
        session_text = " ".join(dict.fromkeys(m.quote for m in memories if m.subject == Subject.PATIENT))
        turn_quotes: dict[str, list[tuple[int, str]]] = {}
        for mem in memories:
            quotes = turn_quotes.setdefault(mem.anchor_turn_id, [])
            if mem.quote and all(q != mem.quote for _, q in quotes):
                quotes.append((mem.quote_start or 0, mem.quote))
        # in the order the patient said them: what follows a sentence about a drug is read as about that drug
        ctx = Context(idx=idx, kb=self.kb, session_text=session_text, history=history,
                      turn_text={t: " ".join(q for _, q in sorted(qs, key=lambda sq: sq[0])) for t, qs in turn_quotes.items()})
        past = _PastVerdicts(self, history, ctx)
        out = []
        for m in memories:
            verdict = self._judge(m, ctx)
            key = _repeat_key(verdict, m)
            earlier = past.raised(key) if key else None
            if earlier is not None and _elapsed(earlier, m.mention_time) <= REPEAT_WINDOW:
                # the same discrepancy on the same resource was raised from an earlier session: the queue already
                # holds it, and a follow-up mention ("still on half a pill") is not a new finding
                verdict = Verdict(NCR, verdict.category, f"repeat-of-{verdict.rule}"[:80],
                                  explanation="Repeats a discrepancy already raised from an earlier session.").cite(*verdict.cites[:1])
            out.append(self._finding(verdict, m))
        return out

    def _past_keys(self, record: object) -> dict[tuple, tuple[str, str, str] | None]:
        """Repeat keys of earlier memories judged on their own, kept for one record object at a time (a new record,
        or a changed one, starts afresh): every later session of the patient asks about the same memories."""
        if self._past_record is not record or len(self._past) > 20000:
            self._past = {}
            self._past_record = record
        return self._past

    def _finding(self, v: Verdict, memory: MemoryDraft) -> FindingDraft:
        discrepancy = v.kind in (CONTRA, GAP)
        v.cites = v.cites[:MAX_CITATIONS]  # the resource the finding is about comes first; a reviewer opens a handful
        return FindingDraft(
            kind=str(v.kind),
            severity=str(v.severity if discrepancy else Severity.LOW),
            # high severity means acute harm potential, which is what the safety flag marks; the flag can still be
            # set on a medium finding (a stopped controller inhaler) from the tables
            safety_critical=bool((v.safety or v.severity == Severity.HIGH) and discrepancy),
            category=str(v.category),
            citations=[Citation.of(e) for e in v.cites],
            explanation=_sentences(v.explanation, MAX_EXPLANATION),
            rule=v.rule,
            engine=self.name,
            engine_version=self.version,
        )

    def _judge(self, m: MemoryDraft, ctx: Context) -> Verdict:
        category = m.category
        if m.subject != Subject.PATIENT and not _only_the_patient_in(m.quote) and not _measured_on_the_patient(m):
            return Verdict(NCR, _record_category(category), "subject-other", explanation="About another person, not the patient.")
        if m.assertion == Assertion.HYPOTHETICAL:
            # a committed plan to do what the record forbids (a live vaccine on immunosuppression) is actionable now;
            # a conditional ("if the rash spreads I would ...") stays a hypothetical
            planned = self._planned_live_vaccine(m, ctx) or self._planned_plan_breach(m, ctx)
            if planned is not None:
                return planned
        if m.assertion in (Assertion.HYPOTHETICAL, Assertion.UNCERTAIN):
            return Verdict(NCR, _record_category(category), f"assertion-{m.assertion}", explanation="Hypothetical or uncertain; nothing to reconcile.")
        text = _text(m)
        if m.assertion == Assertion.AFFIRMED and _pregnant_now(m.quote) and category not in ("goal", "preference"):
            return self._pregnancy(m, ctx)
        relapse = self._alcohol_relapse(m, ctx)
        if relapse is not None:
            return relapse
        if category in ("lifestyle", "care_activity", "goal") and m.assertion == Assertion.AFFIRMED:
            disowned = self._allergy_disowned_in_chatter(m, ctx)
            if disowned is not None:
                return disowned
            # a red flag filed as chatter ("black tarry stools for 3 days") still reaches the queue when it is acute or
            # the record makes it dangerous (condition.py decides which)
            flag = self._red_flag_verdict(m, ctx, regex_text(m.quote), reread=True)
            if flag is not None:
                flag.rule = f"{flag.rule}+reread"
                return flag
        handler = {
            "medication": self._medication,
            "allergy": self._allergy,
            "condition": self._condition,
            "symptom": self._condition,
            "measurement": self._measurement,
            "procedure": self._procedure,
            "immunization": self._immunization,
            "care_activity": self._care_activity,
            "lifestyle": self._lifestyle,
        }.get(category)
        if handler is None:
            return Verdict(NCR, Cat.CAREPLAN, "non-clinical", explanation="Goal or preference; no clinical content to reconcile.")
        verdict = handler(m, ctx)
        if category == "measurement" and verdict.kind not in (CONTRA, GAP) and m.assertion == Assertion.AFFIRMED:
            # a number said beside a warning sign ("can't keep anything down, lost 6 pounds" in pregnancy): the reading
            # is unremarkable, the sign is not
            flag = self._red_flag_verdict(m, ctx, regex_text(m.quote), reread=True)
            if flag is not None:
                flag.rule = f"{flag.rule}+reread"
                return flag
        if verdict.kind == NCR and category not in ("lifestyle",):
            smoking = self._smoking(m, ctx, text)
            if smoking is not None:
                return smoking
        return verdict


def _pregnant_now(quote: str) -> bool:
    """The quote says the patient is pregnant, outside a clause that sets another event in an earlier pregnancy
    ("when I was pregnant with my first I fainted" is a retold history, not a pregnancy the record lacks)."""
    return bool(PREGNANT.search(PREGNANT_PAST.sub(" ", regex_text(quote))))


def _measured_on_the_patient(m: MemoryDraft) -> bool:
    """A reading taken on the patient though another person helped or owned the device ("mom made me prick my finger
    with her meter: 247"): the patient is the one measured (causative frame, the act on the patient's own body) and no
    reading is said to be the other person's."""
    quote = regex_text(m.quote)
    return m.category == "measurement" and bool(MEASURED_ON_PATIENT.search(quote)) and not READING_OF_OTHER.search(quote)


def _concept(m: MemoryDraft) -> str:
    """The third part of a memory's repeat key (what the patient spoke of), read from its attributes alone."""
    return next((str(m.attributes[a]).strip().lower() for a in _CONCEPT_ATTRIBUTES if m.attributes.get(a)), "")


class _PastVerdicts:
    """Discrepancies the rules raise on the patient's earlier memories, judged only when a finding of this session
    asks: (rule, resource, concept) -> latest mention. A repeat key ends with the memory's own concept, so only the
    earlier memories of that concept can hold it; judging every earlier memory on every session (most of them never
    asked about) made the engine's cost grow with the square of a patient's sessions."""

    def __init__(self, rules: RulesReconciler, history: Sequence[MemoryDraft], ctx: Context) -> None:
        self.rules, self.history = rules, history
        self.ctx = Context(idx=ctx.idx, kb=ctx.kb, session_text="", history=())  # each memory judged on its own
        self._by_concept: dict[str, list[MemoryDraft]] | None = None
        self._raised: dict[tuple[str, str, str], datetime | None] = {}

    def raised(self, key: tuple[str, str, str]) -> datetime | None:
        if key not in self._raised:
            self._raised[key] = self._latest(key)
        return self._raised[key]

    def _latest(self, key: tuple[str, str, str]) -> datetime | None:
        if self._by_concept is None:
            self._by_concept = {}
            for m in self.history:  # in history order, so ties resolve as a scan of the whole history would
                self._by_concept.setdefault(_concept(m), []).append(m)
        cache = self.rules._past_keys(self.ctx.idx.record)
        latest: datetime | None = None
        for m in self._by_concept.get(key[2], ()):
            cache_key = (m.anchor_turn_id, m.turn_ids, m.quote, m.category, m.subject, m.assertion, m.mention_time,
                         repr(sorted(m.attributes.items(), key=lambda kv: kv[0])))
            if cache_key not in cache:
                cache[cache_key] = _repeat_key(self.rules._judge(m, self.ctx), m)
            if cache[cache_key] == key and (latest is None or latest < m.mention_time):
                latest = m.mention_time
        return latest
