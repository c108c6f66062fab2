"""The learned judge: the last step of the rules reconciler, deciding which verdicts reach the nurse.

The rules say what a memory is against the record (kind, rule, citations, severity from the tables). The judge,
a logistic model trained on the labelled corpus (evaluation/training.py), scores how likely that verdict is a real
discrepancy from the verdict's own features (kind, rule, category, what it cites and in what state), the memory's
(assertion, subject, action, a fallback memory or not), the turn detector's score and the words of the quote.
Two thresholds, both chosen on out-of-fold scores:
- a discrepancy the judge scores under `veto` is kept as no clinical relevance (a false alarm costs the nurse);
- a non-discrepancy verdict on the patient's own affirmed clinical memory that the judge scores over `promote`
  becomes a discrepancy (contradiction when it cites a current record entry of the same kind, gap otherwise).
Every change is written on the finding: its rule gains a `judge-` prefix and the top features go to `gate_notes`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reconcile_app.core.linear import LinearModel, load_model
from reconcile_app.fhir.clinical import ClinicalRecord, State
from reconcile_app.narrative.types import Assertion, MemoryDraft, Subject
from reconcile_app.reconciliation.types import DISCREPANCY_KINDS, FindingDraft, FindingKind, Severity

MODEL_PATH = Path(__file__).resolve().parent.parent / "learned" / "judge.json"
CLINICAL = frozenset({"medication", "condition", "symptom", "allergy", "procedure", "immunization", "measurement", "care_activity"})
_RECORD_TYPE_OF = {
    "medication": ("MedicationRequest", "MedicationStatement"), "allergy": ("AllergyIntolerance",),
    "condition": ("Condition",), "symptom": ("Condition",), "procedure": ("Procedure",), "immunization": ("Immunization",),
    "measurement": ("Observation",), "care_activity": ("CarePlan",),
}


def rule_family(rule: str) -> str:
    parts = rule.replace("+", "-").split("-")
    return "-".join(parts[:2])


def finding_dense(memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> dict[str, float]:
    """Named features of one verdict (no clinical text): the same function trains and runs."""
    a = memory.attributes
    who = "self" if memory.subject == Subject.PATIENT else "other"
    dense: dict[str, float] = {
        f"kind:{draft.kind}": 1.0,
        f"rule:{draft.rule}": 1.0,
        f"rulefam:{rule_family(draft.rule)}": 1.0,
        f"cat:{memory.category}": 1.0,
        f"mem:{memory.category}:{who}:{memory.assertion}": 1.0,
    }
    if draft.kind in DISCREPANCY_KINDS:
        dense[f"sev:{draft.severity}"] = 1.0
        if draft.safety_critical:
            dense["safety"] = 1.0
    for key in ("action", "stated_status", "source", "dose_change"):
        if a.get(key):
            dense[f"{key}:{memory.category}:{a[key]}"] = 1.0
    if a.get("fallback"):
        dense["fallback"] = 1.0
    if a.get("record_ref"):
        dense["record_ref"] = 1.0
    delta = (a.get("delta") or {}).get("score")
    if isinstance(delta, (int, float)):
        p = min(max(float(delta), 1e-4), 1 - 1e-4)
        dense["delta_logit"] = math.log(p / (1 - p)) / 4.0
        dense[f"delta_band:{min(int(p * 5), 4)}"] = 1.0
    dense[f"cites:{min(len(draft.citations), 3)}"] = 1.0
    own_types = _RECORD_TYPE_OF.get(memory.category, ())
    for c in draft.citations[:4]:
        entry = record.get(c.resource_type, c.id)
        state = entry.state if entry is not None else "missing"
        dense[f"cite:{c.resource_type}:{state}"] = 1.0
        if c.resource_type in own_types:
            dense[f"cite_own:{state}"] = 1.0
    return dense


def judge_texts(memory: MemoryDraft) -> dict[str, str]:
    return {"q": memory.quote or ""}


@dataclass
class Judge:
    model: LinearModel
    veto: float
    promote: float

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> Judge | None:
        if not path.exists():
            return None
        model = load_model(str(path))
        return cls(model, float(model.meta.get("veto", model.threshold)), float(model.meta.get("promote", 1.01)))

    @property
    def version(self) -> str:
        return f"judge.{self.model.fingerprint()[:6]}"

    def score(self, memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> tuple[float, list[str]]:
        features = self.model.featurize(judge_texts(memory), finding_dense(memory, draft, record))
        return self.model.positive(features), [name for name, _ in self.model.explain(features, top=4)]

    def apply(self, memories: Sequence[MemoryDraft], drafts: list[FindingDraft], record: ClinicalRecord) -> list[FindingDraft]:
        return [self.decide(m, d, record) for m, d in zip(memories, drafts)]

    def decide(self, memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> FindingDraft:
        p, why = self.score(memory, draft, record)
        note = f"judge {p:.2f} ({', '.join(why)})"[:200]
        if draft.kind in DISCREPANCY_KINDS:
            if p < self.veto:
                draft.gate_notes.append(f"{note}: below {self.veto:.2f}, kept as no clinical relevance")
                draft.kind, draft.severity, draft.safety_critical = FindingKind.NO_CLINICAL_RELEVANCE, Severity.LOW, False
                draft.rule = f"judge-veto:{draft.rule}"[:80]
            return draft
        if p >= self.promote and self._promotable(memory, draft):
            draft.gate_notes.append(f"{note}: over {self.promote:.2f}, raised for review")
            draft.kind = self._kind(memory, draft, record)
            draft.severity = Severity.MEDIUM
            draft.rule = f"judge-raise:{draft.rule}"[:80]
            draft.explanation = _raised_explanation(memory, draft)
        return draft

    @staticmethod
    def _promotable(memory: MemoryDraft, draft: FindingDraft) -> bool:
        return memory.subject == Subject.PATIENT and memory.assertion == Assertion.AFFIRMED and memory.category in CLINICAL

    @staticmethod
    def _kind(memory: MemoryDraft, draft: FindingDraft, record: ClinicalRecord) -> str:
        own = _RECORD_TYPE_OF.get(memory.category, ())
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
