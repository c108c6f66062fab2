"""Tiny deterministic engines for pipeline-mechanics tests (ordering, idempotency, failure), not NLP."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from reconcile_app.core.exceptions import PermanentError, RetryableError
from reconcile_app.narrative.engines.base import Extractor
from reconcile_app.narrative.types import MemoryDraft, SessionInput
from reconcile_app.reconciliation.engines.base import Reconciler
from reconcile_app.reconciliation.types import Citation, FindingDraft


class FakeExtractor(Extractor):
    """One memory per patient turn. Optional hooks: a log of calls, failures, a slow first call."""

    name = "rules"
    version = "fake-1"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail_sessions: dict[str, Exception] = {}
        self.log_path: Path | None = None
        self.pause_first_call: Path | None = None  # write our pid here, then sleep (to be killed)
        self.on_call: Callable[[SessionInput], None] | None = None
        self.sleep = 0.05  # with a log: long enough for an overlap to show if ordering were broken

    def extract_session(self, session: SessionInput, *, prior: Sequence[MemoryDraft] = (), record: object = None) -> list[MemoryDraft]:
        started = time.time()
        self.calls.append(session.id)
        if self.on_call is not None:
            self.on_call(session)
        if self.pause_first_call is not None and not self.pause_first_call.exists():
            self.pause_first_call.write_text(str(os.getpid()))
            time.sleep(60)  # the test kills this process here
        if self.log_path is not None:
            time.sleep(self.sleep)
        error = self.fail_sessions.get(session.id)
        if error is not None:
            raise error
        drafts = [
            MemoryDraft(
                category="medication" if "pill" in t.text.lower() else "lifestyle",
                content=t.text[:80],
                anchor_turn_id=t.id,
                turn_ids=(t.id,),
                quote=t.text[:80],
                quote_start=0,
                quote_end=min(len(t.text), 80),
                speaker=t.speaker,
                mention_time=t.at,
                engine=self.name,
                engine_version=self.version,
            )
            for t in session.turns
            if t.speaker == "patient"
        ]
        if self.log_path is not None:
            with self.log_path.open("a") as fh:
                fh.write(json.dumps({"session": session.id, "start": started, "end": time.time(), "pid": os.getpid(), "prior": len(prior)}) + "\n")
        return drafts


class FakeReconciler(Reconciler):
    """A gap citing the first medication of the record for 'pill' memories; nothing else."""

    name = "rules"
    version = "fake-1"

    def reconcile(self, memories: Sequence[MemoryDraft], record: object, *, history: Sequence[MemoryDraft] = ()) -> list[FindingDraft]:
        meds = [e for e in getattr(record, "entries", []) if getattr(e, "resource_type", "").startswith("Medication")]
        out = []
        for m in memories:
            if m.category == "medication":
                cites = [Citation(resource_type=meds[0].resource_type, id=meds[0].id)] if meds else []
                out.append(FindingDraft(kind="gap", severity="medium", category="medication", citations=cites, explanation="fake gap", rule="fake"))
            else:
                out.append(FindingDraft(kind="no_clinical_relevance", explanation="fake", rule="fake"))
        return out


def install_fakes(names: Sequence[str] = ("rules", "llm", "hybrid")) -> tuple[FakeExtractor, FakeReconciler]:
    from reconcile_app.narrative import engines as narrative_engines
    from reconcile_app.reconciliation import engines as reconciliation_engines

    extractor, reconciler = FakeExtractor(), FakeReconciler()
    for name in names:
        narrative_engines._cache[name] = extractor
        reconciliation_engines._cache[name] = reconciler
    return extractor, reconciler


@contextmanager
def fakes_installed() -> Iterator[tuple[FakeExtractor, FakeReconciler]]:
    """The fakes stand in for every engine name, and the real cached engines come back after."""
    from reconcile_app.narrative import engines as narrative_engines
    from reconcile_app.reconciliation import engines as reconciliation_engines

    saved = (dict(narrative_engines._cache), dict(reconciliation_engines._cache))
    try:
        yield install_fakes()
    finally:
        narrative_engines._cache.clear()
        narrative_engines._cache.update(saved[0])
        reconciliation_engines._cache.clear()
        reconciliation_engines._cache.update(saved[1])


__all__ = ["FakeExtractor", "FakeReconciler", "fakes_installed", "install_fakes", "PermanentError", "RetryableError"]
