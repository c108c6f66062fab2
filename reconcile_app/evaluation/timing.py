"""Where a replay spends its time: the engines' own calls timed apart from the services around them."""
from __future__ import annotations

import time
from datetime import datetime, timezone as dt_timezone
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from reconcile_app.core.gcpolicy import gc_paused


@dataclass
class ReplayTimings:
    """Seconds by part; `services` is whatever the replay spent outside the engines and their loading."""

    engines_load: float = 0.0  # building the engines once (lexicon index, knowledge tables)
    extraction: float = 0.0  # Extractor.extract_session calls
    reconciliation: float = 0.0  # Reconciler.reconcile calls
    calls: dict[str, int] = field(default_factory=lambda: {"extraction": 0, "reconciliation": 0})
    # CPU seconds of this process in the same parts: on a shared machine wall time also counts waiting
    cpu: dict[str, float] = field(default_factory=lambda: {"engines_load": 0.0, "extraction": 0.0, "reconciliation": 0.0})

    @property
    def engines(self) -> float:
        return self.extraction + self.reconciliation

    def as_dict(self, *, total: float, total_cpu: float) -> dict[str, Any]:
        services = max(total - self.engines_load - self.engines, 0.0)
        services_cpu = max(total_cpu - sum(self.cpu.values()), 0.0)
        return {
            "total_s": round(total, 3), "engines_load_s": round(self.engines_load, 3),
            "extraction_engine_s": round(self.extraction, 3), "reconciliation_engine_s": round(self.reconciliation, 3),
            "services_s": round(services, 3), "engine_calls": dict(self.calls),
            "cpu_s": {"total": round(total_cpu, 3), **{k: round(v, 3) for k, v in self.cpu.items()}, "services": round(services_cpu, 3)},
        }


def _timed(timings: ReplayTimings, part: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            setattr(timings, part, getattr(timings, part) + time.perf_counter() - started)
            timings.cpu[part] += time.thread_time() - cpu
            timings.calls[part] += 1

    return wrapper


def _warm(extractor: Any, reconciler: Any) -> None:
    """One made-up turn through both engines, so what they load lazily on first use (the lexicon
    index) is loaded before worker processes fork and shared by them, not loaded once per worker."""
    from reconcile_app.fhir.clinical import build_clinical_record
    from reconcile_app.narrative.types import SessionInput, TurnInput

    now = datetime.now(tz=dt_timezone.utc)
    session = SessionInput(id="warm-up", started_at=now, turns=(TurnInput(id="t1", speaker="patient", at=now,
                                                                           text="I stopped my lisinopril last week."),))
    record = build_clinical_record([{"resourceType": "Patient", "id": "warm-up"}])
    reconciler.reconcile(extractor.extract_session(session, record=record), record)


@contextmanager
def engines_timed(engine: str | None, *, warm: bool = False) -> Iterator[ReplayTimings]:
    """Build the engines the replay will use (timed as their load; `warm` also runs them once), and
    time every call into them by shadowing the bound methods on the process's engine instances; put
    back on exit."""
    from reconcile_app.narrative.engines import get_extractor
    from reconcile_app.reconciliation.engines import get_reconciler

    timings = ReplayTimings()
    started, cpu = time.perf_counter(), time.thread_time()
    with gc_paused():  # everything built here lives as long as the process
        extractor, reconciler = get_extractor(engine), get_reconciler(engine)
        if warm:
            _warm(extractor, reconciler)
    timings.engines_load = time.perf_counter() - started
    timings.cpu["engines_load"] = time.thread_time() - cpu
    patched = [(extractor, "extract_session", "extraction"), (reconciler, "reconcile", "reconciliation")]
    for obj, name, part in patched:
        setattr(obj, name, _timed(timings, part, getattr(obj, name)))
    try:
        yield timings
    finally:
        for obj, name, _part in patched:
            obj.__dict__.pop(name, None)
