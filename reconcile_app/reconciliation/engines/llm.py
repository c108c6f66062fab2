"""The LLM reconciler: the dual-stream paper's method, the curated clinical summary plus memories to structured findings.

Memories are sent in small batches (the summary is the bulk of the prompt, so batching saves most of
the tokens); each memory gets exactly one finding, found by its ref, and a memory the model skipped is
asked about alone. Citations go through the deterministic citation gate before anything is returned.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings

from reconcile_app.core.exceptions import PermanentError
from reconcile_app.core.llm import LlmEngine, neutralize
from reconcile_app.fhir.clinical import ClinicalRecord, curated_summary
from reconcile_app.narrative.types import MemoryDraft
from reconcile_app.reconciliation.gate import citation_gate
from reconcile_app.reconciliation.types import Citation, FindingCategory, FindingDraft, FindingKind, Severity

from .base import Reconciler

logger = logging.getLogger(__name__)

PROMPT_PATH = Path(__file__).resolve().parent.parent / "prompts" / "reconcile.v1.txt"
ENGINE_VERSION = "1.0.0"
MAX_SUMMARY_CHARS = 24_000  # a very long record is cut at a line boundary, with a note to the model
MAX_CITATIONS = 4


def finding_schema(refs: Sequence[str]) -> dict[str, Any]:
    """Exactly one finding per memory ref; every string and array bounded (small models loop otherwise).
    Citations are free strings on purpose: a made-up id must reach the citation gate, not fail the call."""
    finding = {
        "type": "object",
        "properties": {
            "memory": {"type": "string", "enum": list(refs)},
            "kind": {"type": "string", "enum": [k.value for k in FindingKind]},
            "severity": {"type": "string", "enum": [s.value for s in Severity]},
            "safety_critical": {"type": "boolean"},
            "category": {"type": "string", "enum": ["", *(c.value for c in FindingCategory)]},
            "citations": {"type": "array", "maxItems": MAX_CITATIONS, "items": {"type": "string", "maxLength": 100}},
            "explanation": {"type": "string", "maxLength": 240},
        },
        "additionalProperties": False,
    }
    finding["required"] = list(finding["properties"])  # type: ignore[index]
    return {
        "type": "object",
        "properties": {"findings": {"type": "array", "minItems": len(refs), "maxItems": len(refs), "items": finding}},
        "required": ["findings"],
        "additionalProperties": False,
    }


def summary_for(record: ClinicalRecord, *, today: date | None = None) -> str:
    summary = curated_summary(record, today=today)
    if len(summary) <= MAX_SUMMARY_CHARS:
        return summary
    cut = summary.rfind("\n", 0, MAX_SUMMARY_CHARS)
    return summary[:cut] + "\n(summary truncated: later entries omitted)"


def citation_from(text: str, record: ClinicalRecord) -> Citation | None:
    """"MedicationRequest/medrx-1" (or a bare id that names one resource) to a Citation; the gate checks it."""
    text = text.strip().strip("[]").strip()
    if not text:
        return None
    rtype, sep, rid = text.partition("/")
    if sep:
        return Citation(resource_type=rtype.strip(), id=rid.strip())
    matches = [e for e in record.entries if e.id == text]
    if len(matches) == 1:
        return Citation(resource_type=matches[0].resource_type, id=matches[0].id)
    return Citation(resource_type="?", id=text)  # unknown: the gate drops it and says so


def memory_block(ref: str, memory: MemoryDraft, history: Sequence[MemoryDraft]) -> str:
    """One memory as data: every piece of transcript text is neutralized so it cannot close a tag."""
    when = ""
    if memory.event_time and memory.event_time.start:
        when = f" event_time={memory.event_time.start.date().isoformat()}"
    attrs = ", ".join(f"{k}={v}" for k, v in sorted(memory.attributes.items()) if k != "llm" and isinstance(v, (str, int, float)))
    lines = [
        f"[{ref}] category={memory.category} subject={memory.subject}"
        f"{'/' + memory.subject_relation if memory.subject_relation else ''} assertion={memory.assertion}"
        f" said={memory.mention_time.date().isoformat()}{when}",
        f"  content: {neutralize(memory.content[:300])}",
        f"  quote: {neutralize(memory.quote[:300])}",
    ]
    if attrs:
        lines.append(f"  attributes: {neutralize(attrs[:300])}")
    earlier = [h for h in history if memory.chain_key and h.chain_key == memory.chain_key][-2:]
    for h in earlier:
        lines.append(f"  earlier state ({h.mention_time.date().isoformat()}): {neutralize(h.content[:200])}")
    return "\n".join(lines)


class LlmReconciler(LlmEngine, Reconciler):
    name = "llm"
    prompt_path = PROMPT_PATH
    engine_version = ENGINE_VERSION

    @property
    def rule(self) -> str:
        return f"llm:{self.prompt.version}"

    def reconcile(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        if not memories:
            return []
        batch_size = max(1, int(getattr(settings, "LLM_RECONCILE_BATCH", 6)))
        max_tokens = int(getattr(settings, "LLM_MAX_TOKENS", 2048))
        client = self.client()
        summary = neutralize(summary_for(record))
        usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "asked_again": 0}
        found: dict[int, dict[str, Any]] = {}
        pending = [list(range(i, min(i + batch_size, len(memories)))) for i in range(0, len(memories), batch_size)]
        retried: set[int] = set()
        while pending:
            batch = pending.pop(0)
            refs = {f"M{n + 1}": idx for n, idx in enumerate(batch)}
            messages = self.prompt.messages(
                summary=summary,
                memories="\n".join(memory_block(ref, memories[idx], history) for ref, idx in refs.items()),
                refs=", ".join(refs),
            )
            result = client.complete_json(messages=messages, schema_name="findings", schema=finding_schema(list(refs)),
                                          max_tokens=max_tokens)
            usage["calls"] += result.usage()["calls"]
            usage["prompt_tokens"] += result.prompt_tokens
            usage["completion_tokens"] += result.completion_tokens
            for item in result.data["findings"]:
                idx = refs[item["memory"]]
                found.setdefault(idx, item)  # the first answer for a ref counts
            for idx in batch:
                if idx not in found:
                    if idx in retried or len(batch) == 1:
                        raise PermanentError("model gave no finding for a memory after asking about it alone")
                    retried.add(idx)
                    usage["asked_again"] += 1
                    pending.append([idx])
        self.last_usage = usage
        logger.info("llm reconciliation: %s memories %s", len(memories), usage)
        return [self._finding(found[i], record) for i in range(len(memories))]

    def _finding(self, item: dict[str, Any], record: ClinicalRecord) -> FindingDraft:
        citations = [c for c in (citation_from(t, record) for t in item["citations"]) if c is not None]
        draft = FindingDraft(
            kind=item["kind"],
            severity=item["severity"],
            safety_critical=bool(item["safety_critical"]),
            category=item["category"],
            citations=list(dict.fromkeys(citations)),
            explanation=" ".join(item["explanation"].split())[:300],
            rule=self.rule,
            engine=self.name,
            engine_version=self.version,
        )
        return citation_gate(draft, record)
