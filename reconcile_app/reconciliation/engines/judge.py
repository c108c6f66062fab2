"""The learned judge: the last step of the rules reconciler, deciding which patient turns reach the nurse.

The rules say what each memory is against the record (kind, rule, citations, severity from the tables). The judge
looks at one patient turn at a time, because that is where a patient says one thing that matters: a logistic model
trained on the labelled corpus (evaluation/training.py) scores the turn from what the rules found in it (the kinds,
rules, categories, actions and record states of all its memories' verdicts) and from the turn detector's score
(narrative/engines/delta.py, the words of the turn and of the coach's question). Then:
- a turn scored under the threshold raises nothing: its discrepancies are kept as no clinical relevance (a false
  alarm costs the nurse), with the score and the features that decided in `gate_notes`;
- a turn scored at or over it raises exactly one finding: its most serious rules discrepancy, or, where the rules saw
  none, its best-grounded clinical memory of the patient's own, raised for review (a contradiction when it cites a
  current record entry of its own kind, a gap otherwise). Its other discrepancies stay visible as notes, not as
  separate queue items: one turn, one thing for a nurse to check.
The threshold is chosen on out-of-fold scores (folds by author), counting what the safety floor keeps: the best detection
within the false-alarm budget (`train_models --max-false`, 0.04 per ordinary session) at no less detection than the rules
alone; where no threshold beats the rules the filter ships off (threshold above 1).
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reconcile_app.core.cues import cues_load
from reconcile_app.core.linear import LinearModel, load_model
from reconcile_app.fhir.clinical import ClinicalRecord, State
from reconcile_app.narrative.types import Assertion, MemoryDraft, MemoryOp, Subject
from reconcile_app.reconciliation.engines.citing import OWN_TYPES, CitationRanker, add_citations
from reconcile_app.reconciliation.types import DISCREPANCY_KINDS, SEVERITY_RANK, FindingDraft, FindingKind, Severity, rule_family

MODEL_PATH = Path(__file__).resolve().parent.parent / "learned" / "judge.json"
# What a raised turn is, learned from the labelled scenarios (each shipped only where it beat the rules out of fold):
# its kind (contradiction or gap), whether it is safety-critical, and the severity of a turn the rules did not rate.
OUTCOME_PATHS = {name: MODEL_PATH.with_name(f"judge-{name}.json") for name in ("kind", "safety", "severity")}
CLINICAL = frozenset({"medication", "condition", "symptom", "allergy", "procedure", "immunization", "measurement", "care_activity"})


# data/cues/judge_floor.json: an event placed in a past year ("back in '18", "in January twenty twenty-three")
_FLOOR_CUES = cues_load([Path(__file__).resolve().parents[1] / "data" / "cues" / "judge_floor.json"])
RETOLD_YEAR = re.compile(_FLOOR_CUES["retold_year"]["pattern"], re.IGNORECASE)
RETOLD_PERIOD = re.compile(_FLOOR_CUES["retold_period"]["pattern"], re.IGNORECASE)
TOLD_AS_NOW = re.compile(_FLOOR_CUES["told_as_now"]["pattern"], re.IGNORECASE)
AS_INSTRUCTED = re.compile(_FLOOR_CUES["as_instructed"]["pattern"], re.IGNORECASE)
ADHERENCE_LAPSE = re.compile(_FLOOR_CUES["adherence_lapse"]["pattern"], re.IGNORECASE)
_YEAR_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen".split())}


def finding_dense(memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> dict[str, float]:
    """Named features of one verdict (no clinical text)."""
    a = memory.attributes
    who = "self" if memory.subject == Subject.PATIENT else "other"
    dense: dict[str, float] = {
        f"kind:{draft.kind}": 1.0,
        f"rule:{draft.rule}": 1.0,
        f"rulefam:{rule_family(draft.rule)}": 1.0,
        f"mem:{memory.category}:{who}:{memory.assertion}": 1.0,
    }
    if draft.kind in DISCREPANCY_KINDS:
        dense[f"sev:{draft.severity}"] = 1.0
        if draft.safety_critical:
            dense["safety"] = 1.0
    for key in ("action", "stated_status", "source", "dose_change"):
        if a.get(key) and who == "self":
            dense[f"{key}:{memory.category}:{a[key]}"] = 1.0
    if a.get("fallback"):
        dense["fallback"] = 1.0
    if a.get("record_ref") and who == "self":
        dense[f"record_ref:{memory.category}"] = 1.0
    dense[f"cites:{min(len(draft.citations), 3)}"] = 1.0
    own_types = OWN_TYPES.get(memory.category, ())
    for c in draft.citations[:4]:
        entry = record.get(c.resource_type, c.id)
        state = entry.state if entry is not None else "missing"
        dense[f"cite:{c.resource_type}:{state}"] = 1.0
        if c.resource_type in own_types:
            dense[f"cite_own:{state}"] = 1.0
    return dense


def delta_dense(memories: Sequence[MemoryDraft]) -> dict[str, float]:
    """The turn detector's score (the same on every memory of a turn)."""
    for m in memories:
        score = (m.attributes.get("delta") or {}).get("score")
        if isinstance(score, (int, float)):
            p = min(max(float(score), 1e-4), 1 - 1e-4)
            return {"delta_logit": math.log(p / (1 - p)) / 4.0, f"delta_band:{min(int(p * 10), 9)}": 1.0}
    return {"delta_none": 1.0}


def turn_dense(memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft], record: ClinicalRecord) -> dict[str, float]:
    """One patient turn as the judge sees it: the union of its verdicts' features, and the detector's score."""
    dense = delta_dense(memories)
    for m, d in zip(memories, drafts):
        for key, value in finding_dense(m, d, record).items():
            dense[f"m:{key}"] = max(dense.get(f"m:{key}", 0.0), value)
        if d.kind in DISCREPANCY_KINDS:
            dense["any_discrepancy"] = 1.0
            if d.safety_critical:
                dense["any_safety"] = 1.0
    dense[f"memories:{min(len(memories), 4)}"] = 1.0
    return dense


def spoken_year(text: str, mention_year: int) -> int | None:
    """A year as said: "2018", "'18" (the most recent such year not after the mention), "twenty eighteen",
    "two thousand and nine", "twenty oh five"."""
    text = text.strip().lower().replace("\u2019", "'")
    if text.isdigit():
        return int(text)
    if text.startswith("'"):
        year = 2000 + int(text[1:])
        return year if year <= mention_year else year - 100
    words = [w for w in re.split(r"[\s-]+", text) if w not in ("and", "oh")]
    if words[:2] == ["two", "thousand"]:
        words = words[2:]
    elif words[:1] == ["twenty"]:
        words = words[1:]
    else:
        return None
    if words[:1] == ["twenty"]:
        return 2020 + sum(_YEAR_WORDS.get(w, 0) for w in words[1:])
    return 2000 + sum(_YEAR_WORDS.get(w, 0) for w in words)


def retold_past(memory: MemoryDraft) -> bool:
    """The memory retells an event of a past year (every year its quote places an event in is before last year):
    history the record may well hold, not news of today (ConText historical temporality)."""
    when = memory.mention_time.year
    years = [spoken_year(hit.group("year"), when) for hit in RETOLD_YEAR.finditer(memory.quote)]
    known = [y for y in years if y is not None]
    return bool(known) and max(known) < when - 1


def retold_period(memory: MemoryDraft) -> bool:
    """The memory sets its event in an earlier period of life or a distant relative past ("years ago", "back when",
    "as a kid", "when I was nineteen"), names no calendar year, and no word brings it to now ("again", "still", "last
    night"): a retold history, like a past year (ConText historical temporality). Kept apart from retold_past, which
    also decides a raised turn's kind: measured there on validation, it turned one contradiction into a gap."""
    if RETOLD_YEAR.search(memory.quote):
        return False  # the year decides (retold_past)
    return bool(RETOLD_PERIOD.search(memory.quote)) and not TOLD_AS_NOW.search(memory.quote)


def affirmed_now(memory: MemoryDraft) -> bool:
    """What the safety floor holds: the memory is the patient's (a caregiver telling of the patient is the patient's
    fact: the extractor's subject says whose it is, not who speaks), affirmed, and not a retold past year.
    Someone else's, negated, hypothetical, historical or long-past statements reach the nurse only through the judge."""
    return memory.subject == Subject.PATIENT and memory.assertion == Assertion.AFFIRMED and not retold_past(memory)


def floor_holds(memory: MemoryDraft, draft: FindingDraft) -> bool:
    """The safety floor: a discrepancy the sourced tables call safety-critical and rate high (acute harm) that the
    patient affirms now is kept whatever the judge scores (Judge.decide_turn; training simulates the same)."""
    return (draft.kind in DISCREPANCY_KINDS and draft.safety_critical and draft.severity == Severity.HIGH and affirmed_now(memory)
            and not retold_period(memory))


# Agreements where the record has caught up with the change the patient reports (the order is now stopped, the allergy
# now inactive): raising them would undo truth maintenance, re-opening as news what an EHR update just resolved
# (memory-ledger revision: a fact superseded by a later record version is closed, not re-asserted).
RECORD_CAUGHT_UP = frozenset({"med-stopped-agrees", "allergy-inactive-agrees"})


def _caught_up(memory: MemoryDraft, draft: FindingDraft) -> bool:
    """The record already holds what the statement says: it caught up with the change (RECORD_CAUGHT_UP), or a later
    statement supersedes the patient's earlier one and the rules find it agreeing (the chain's new state matches the
    record, so the earlier finding is resolved by the ledger, not replaced by a new item)."""
    if draft.kind != FindingKind.AGREEMENT:
        return False
    return draft.rule in RECORD_CAUGHT_UP or memory.op == MemoryOp.SUPERSEDE or taken_as_instructed(memory, draft)


def taken_as_instructed(memory: MemoryDraft, draft: FindingDraft) -> bool:
    """The rules found the patient taking an active order (no dose or schedule they could tell apart from it) and the
    patient says so as adherence to the order ("as prescribed", "like the doctor said", "same as always", "never missed
    one"), with no word of partial or changed use ("only", "half", "skipped", "ran out"): the record already holds
    it, so raising it would put an agreement in the queue (adherence self-report, MARS-5)."""
    return (draft.rule == "med-active-agrees" and bool(AS_INSTRUCTED.search(memory.quote))
            and not ADHERENCE_LAPSE.search(memory.quote))


def promotable(memory: MemoryDraft) -> bool:
    return memory.subject == Subject.PATIENT and memory.assertion == Assertion.AFFIRMED and memory.category in CLINICAL


def pick(memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft]) -> int | None:
    """The verdict a flagged turn raises: its most serious discrepancy, else its best-grounded clinical memory."""
    discrepancies = [i for i, d in enumerate(drafts) if d.kind in DISCREPANCY_KINDS]
    if discrepancies:
        return max(discrepancies, key=lambda i: (drafts[i].safety_critical, SEVERITY_RANK.get(drafts[i].severity, 0),
                                                 len(drafts[i].citations), -i))
    # a turn that reports taking an order as instructed agrees with the record as a whole: its other agreements (the
    # readings in range said beside it, the second pill of the same routine) are not raised in its place
    instructed = any(taken_as_instructed(m, d) for m, d in zip(memories, drafts))
    candidates = [i for i, m in enumerate(memories) if promotable(m) and not _caught_up(m, drafts[i])
                  and not (instructed and drafts[i].kind == FindingKind.AGREEMENT)]
    if not candidates:
        return None
    return max(candidates, key=lambda i: (len(drafts[i].citations), bool(memories[i].attributes.get("record_ref")),
                                          not memories[i].attributes.get("fallback"), -i))


@dataclass
class Judge:
    model: LinearModel
    threshold: float
    outcomes: dict[str, LinearModel] = field(default_factory=dict)  # "kind", "safety", "severity" where shipped
    citer: CitationRanker | None = None  # the entries a reviewer opens beside a raised finding's own (citing.py)

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> Judge | None:
        if not path.exists():
            return None
        model = load_model(str(path))
        outcomes = {name: load_model(str(p)) for name, p in OUTCOME_PATHS.items() if path == MODEL_PATH and p.exists()}
        return cls(model, float(model.threshold), outcomes, CitationRanker.load() if path == MODEL_PATH else None)

    @property
    def version(self) -> str:
        citer = self.citer.version if self.citer is not None else ""
        digest = hashlib.sha256(("".join(m.fingerprint() for m in (self.model, *self.outcomes.values())) + citer).encode()).hexdigest()
        return f"judge.{digest[:6]}"

    def score(self, memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft], record: ClinicalRecord) -> tuple[float, list[str], dict[str, float]]:
        dense = turn_dense(memories, drafts, record)
        features = self.model.featurize({}, dense)
        return self.model.positive(features), [name for name, _ in self.model.explain(features, top=4)], dense

    def apply(self, memories: Sequence[MemoryDraft], drafts: list[FindingDraft], record: ClinicalRecord) -> list[FindingDraft]:
        turns: dict[str, list[int]] = {}
        for i, m in enumerate(memories):
            turns.setdefault(m.anchor_turn_id, []).append(i)
        for indexes in turns.values():
            mems, outs = [memories[i] for i in indexes], [drafts[i] for i in indexes]
            p, why, dense = self.score(mems, outs, record)
            self.decide_turn(mems, outs, record, p, why, dense)
        if self.citer is not None:
            add_citations(self.citer, memories, drafts, record)
        share_kind(memories, drafts)
        return drafts

    @property
    def filters(self) -> bool:
        """False when training found the rules' own verdicts better out of fold than the judge's choice (threshold
        above 1): the turn filter is off and only the outcome models that won characterise the rules' discrepancies."""
        return self.threshold <= 1.0

    def decide_turn(self, memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft], record: ClinicalRecord,
                    p: float, why: list[str], dense: dict[str, float] | None = None) -> None:
        if not self.filters:
            for m, d in zip(memories, drafts):
                if d.kind in DISCREPANCY_KINDS:
                    self.characterise(d, dense or {}, raised=False, now=affirmed_now(m))
            return
        note = f"judge {p:.2f} ({', '.join(why)})"[:200]
        chosen = pick(memories, drafts) if p >= self.threshold else None
        for i, (m, d) in enumerate(zip(memories, drafts)):
            if i == chosen:
                raised = d.kind not in DISCREPANCY_KINDS
                if raised:
                    _raise(m, d, record)
                    d.gate_notes.append(f"{note}: raised for review")
                self.characterise(d, dense or {}, raised=raised, now=affirmed_now(m))
                continue
            if floor_holds(m, d):
                # The safety floor, as in the hybrid engine: a statistical filter may quiet noise, never a
                # discrepancy the sourced tables call safety-critical and rate high (acute harm: a red flag for
                # same-day care, a dangerous interaction) that the patient affirms now. A retold history, another
                # person's fact or a medium-rated sign (a near-fall, a stable shortness of breath) is the filter's
                # to weigh: kept for all of them, the floor raised the validation split's false alarms per plain
                # session from 0.064 to 0.083 and caught no safety scenario more.
                d.gate_notes.append(f"{note}: kept (safety floor: the tables flag it safety-critical)"[:200])
                self.characterise(d, dense or {}, raised=False, now=True)
                continue
            if d.kind in DISCREPANCY_KINDS:
                reason = "below the threshold" if chosen is None else "the turn's other finding speaks for it"
                d.gate_notes.append(f"{note}: {reason}; kept as no clinical relevance")
                d.kind, d.severity, d.safety_critical = FindingKind.NO_CLINICAL_RELEVANCE, Severity.LOW, False
                d.rule = f"judge-quiet:{d.rule}"[:80]


    def characterise(self, draft: FindingDraft, dense: dict[str, float], *, raised: bool, now: bool = True) -> None:
        """Kind, safety flag and severity from the outcome models that beat the rules out of fold (by author); severity on a
        raised turn, or on every discrepancy when it beat the rules' own severity (its `scope` is "all").
        The kind model makes a contradiction only of what the patient affirms now (`now`, see affirmed_now): a conflict
        with the record read into someone else's, a negated, hypothetical or retold-past statement is the costliest false
        alarm, and the model learned kinds from the words around a turn, not from whose statement it is."""
        kind = self.outcomes.get("kind")
        if kind is not None:
            features = kind.featurize({}, dense)
            learned = kind.predict(features)
            if learned == FindingKind.CONTRADICTION and not now:
                learned = draft.kind
            if learned in DISCREPANCY_KINDS and learned != draft.kind:
                draft.gate_notes.append(f"kind {draft.kind} -> {learned} (learned: {_why(kind, features, learned)})"[:200])
                draft.kind = learned
        safety = self.outcomes.get("safety")
        if safety is not None and not draft.safety_critical:
            features = safety.featurize({}, dense)
            p = safety.positive(features)
            if p >= safety.threshold:
                draft.safety_critical = True
                draft.gate_notes.append(f"safety-critical at {p:.2f} (learned: {_why(safety, features, None)}; the tables did not flag it)"[:200])
        severity = self.outcomes.get("severity")
        if severity is not None and (raised or severity.meta.get("scope") == "all"):
            features = severity.featurize({}, dense)
            learned = severity.predict(features)
            if learned != draft.severity:
                draft.gate_notes.append(f"severity {draft.severity} -> {learned} (learned: {_why(severity, features, learned)})"[:200])
                draft.severity = learned


def _entries(draft: FindingDraft) -> set[tuple[str, str]]:
    return {(c.resource_type, c.id) for c in draft.citations}


def share_kind(memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft]) -> None:
    """A raised finding (the rules saw no discrepancy in its turn) about what a rules discrepancy of the same session
    already judges takes that discrepancy's kind: it cites the same record entry, or it draws on the same patient turn.
    Both are about one thing, and the rules read how the patient's words stand against the record (the stop, the dose,
    the status), where the raised turn's kind is a guess from its citations or the kind model. A symptom after stopping
    a drug is news about the stop: the nurse sees one conflict, not a conflict and a gap about the same order. The most
    serious such discrepancy decides."""
    judged = [(m, d) for m, d in zip(memories, drafts) if d.kind in DISCREPANCY_KINDS and not d.rule.startswith("judge-raise")]
    for m, d in zip(memories, drafts):
        if d.kind not in DISCREPANCY_KINDS or not d.rule.startswith("judge-raise") or not affirmed_now(m):
            continue
        shared = [j for jm, j in judged if _entries(j) & _entries(d) or set(jm.turn_ids) & set(m.turn_ids)]
        if not shared:
            continue
        decides = max(shared, key=lambda j: (j.safety_critical, SEVERITY_RANK.get(j.severity, 0), len(_entries(j) & _entries(d))))
        if decides.kind != d.kind:
            d.gate_notes.append(f"kind {d.kind} -> {decides.kind} (the session's {decides.rule} finding judges the same entry or turn)"[:200])
            d.kind = decides.kind


def _why(model: LinearModel, features: dict[str, float], cls: str | None) -> str:
    """The features that weighed most for the model's answer (the finding's explanation of a learned decision)."""
    return ", ".join(name for name, _ in model.explain(features, cls, top=3))


def _raise(memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> None:
    draft.kind = _kind(memory, draft, record)
    draft.severity = Severity.MEDIUM
    draft.rule = f"judge-raise:{draft.rule}"[:80]
    draft.explanation = _raised_explanation(memory, draft)


def _kind(memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> str:
    """A raised turn contradicts the record only where it cites a current entry of its own kind that the rules did not
    find it agreeing with: a statement that agrees with an entry ("took my pressure pill as usual") or adds a detail
    to it is news beside the record (a gap), not a conflict with it; and only a statement the patient affirms now can
    conflict with it: a retold past year ("in 2019 they took me off it") is history the record may well hold."""
    if draft.kind == FindingKind.AGREEMENT or not affirmed_now(memory):
        return FindingKind.GAP
    own = OWN_TYPES.get(memory.category, ())
    for c in draft.citations:
        entry = record.get(c.resource_type, c.id)
        if entry is not None and c.resource_type in own and entry.state == State.ACTIVE:
            return FindingKind.CONTRADICTION
    return FindingKind.GAP


def _raised_explanation(memory: MemoryDraft, draft: FindingDraft) -> str:
    cited = ", ".join(c.display or f"{c.resource_type}/{c.id}" for c in draft.citations[:2])
    said = memory.content.rstrip(".")
    if draft.kind == FindingKind.CONTRADICTION and cited:
        return f"The patient's statement ({said}) may conflict with the record ({cited}); the rules found no exact match, so a nurse should check it."
    if cited:
        return f"The patient's statement ({said}) is not reflected in the record entries it relates to ({cited}); a nurse should check it."
    return f"The patient's statement ({said}) looks clinically relevant and is not in the record; a nurse should check it."
