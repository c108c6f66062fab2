"""The hybrid reconciler: rules and LLM findings merged per memory by fixed rules, behind a citation gate and a safety floor.

Merge rules, applied to each memory in order (R = the rules finding, L = the LLM finding after the
citation gate has dropped every citation to an unknown or entered-in-error resource):

1. The LLM failed (timeout, refusal, answers that never fit the schema): R, noted "llm unavailable".
2. R is a discrepancy (contradiction or gap): R stands, kind, rule and explanation included. The LLM
   may only add to it: severity becomes the higher of the two and the safety flag turns on when L is a
   discrepancy too and says so; L's surviving citations are appended. The LLM never suppresses or
   downgrades R (the safety floor); a disagreement is written in the gate notes.
3. R is agreement or no clinical relevance and L is a discrepancy: L is adopted only when the memory is
   about the patient, and, for a contradiction, at least one of its citations survived the gate (a
   contradiction with nothing in the record to point at is not checkable). Otherwise R, with a note.
4. Neither is a discrepancy: R, with L's surviving citations appended when both agree.

Because the LLM can add but never remove or lower a rules discrepancy, text in a transcript that talks
the model into "everything is agreement" cannot change what the rules found.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from reconcile_app.core.exceptions import PermanentError, RetryableError
from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import MemoryDraft, Subject
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.types import SEVERITY_RANK, Citation, FindingDraft, FindingKind

from .base import Reconciler
from .llm import LlmReconciler

logger = logging.getLogger(__name__)

ENGINE_VERSION = "1.0.0"
MAX_CITATIONS = 6


def _merge_citations(first: list[Citation], more: list[Citation]) -> list[Citation]:
    seen = {(c.resource_type, c.id) for c in first}
    out = list(first)
    for c in more:
        if (c.resource_type, c.id) not in seen and len(out) < MAX_CITATIONS:
            seen.add((c.resource_type, c.id))
            out.append(c)
    return out


def merge(rules: FindingDraft, llm: FindingDraft, memory: MemoryDraft) -> FindingDraft:
    """One memory's merged finding (rules 2-4 of the module docstring). Pure and deterministic."""
    notes = list(rules.gate_notes) + [f"llm: {n}" for n in llm.gate_notes]
    if rules.is_discrepancy:
        out = replace(rules, gate_notes=notes, citations=list(rules.citations))
        if llm.is_discrepancy:
            if SEVERITY_RANK[llm.severity] > SEVERITY_RANK[rules.severity]:
                out.severity = llm.severity
                notes.append(f"severity raised by llm ({rules.severity} to {llm.severity})")
            if llm.safety_critical and not rules.safety_critical:
                out.safety_critical = True
                notes.append("safety flag raised by llm")
            out.citations = _merge_citations(out.citations, llm.citations)
        else:
            floor = "safety floor: " if rules.safety_critical else ""
            notes.append(f"{floor}llm said {llm.kind}; rules {rules.kind} kept")
        return out
    if llm.is_discrepancy:
        reason = ""
        if memory.subject != Subject.PATIENT:
            reason = "memory is not about the patient"
        elif llm.kind == FindingKind.CONTRADICTION and not llm.citations:
            reason = "contradiction without a valid citation"
        if reason:
            notes.append(f"llm {llm.kind} not adopted ({reason}); rules {rules.kind} kept")
            return replace(rules, gate_notes=notes, citations=list(rules.citations))
        notes.append(f"llm {llm.kind} adopted over rules {rules.kind} ({rules.rule})"[:200])
        return replace(llm, gate_notes=notes, citations=list(llm.citations))
    out = replace(rules, gate_notes=notes, citations=list(rules.citations))
    if llm.kind == rules.kind:
        out.citations = _merge_citations(out.citations, llm.citations)
    return out


class HybridReconciler(Reconciler):
    name = "hybrid"

    def __init__(self, rules: Reconciler | None = None, llm: LlmReconciler | None = None) -> None:
        self._rules = rules
        self._llm = llm

    @property
    def llm(self) -> LlmReconciler:
        if self._llm is None:
            from . import get_reconciler

            engine = get_reconciler("llm")
            assert isinstance(engine, LlmReconciler)
            return engine
        return self._llm

    @property
    def rules(self) -> Reconciler:
        if self._rules is None:
            from . import get_reconciler

            return get_reconciler("rules")
        return self._rules

    @property
    def version(self) -> str:  # type: ignore[override]
        # Both engines' versions key idempotency: the LLM's carries its prompt and model ("1.0.0+v1/<model>").
        return f"{ENGINE_VERSION}+r{self.rules.version}+{self.llm.version.partition('+')[2]}"[:40]

    def reconcile(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        version = self.version
        rules = [citation_gate(f, record) for f in self.rules.reconcile(memories, record, history=history)]
        try:
            llm = self.llm.reconcile(memories, record, history=history)
        except (RetryableError, PermanentError) as exc:
            # Rule 1: the rules findings stand alone; the note names the error class, never its text.
            logger.warning("hybrid: llm unavailable (%s); rules findings only", exc.__class__.__name__)
            note = f"llm unavailable ({exc.__class__.__name__}): rules findings only"
            return [replace(f, gate_notes=[*f.gate_notes, note], engine=self.name, engine_version=version) for f in rules]
        out = []
        for memory, r, l in zip(memories, rules, llm, strict=True):
            merged = merge(r, citation_gate(l, record), memory)
            merged.engine, merged.engine_version = self.name, version
            out.append(merged)
        return out
