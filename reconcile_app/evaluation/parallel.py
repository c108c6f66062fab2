"""Replay patients in worker processes: patients are independent, so each core takes whole patients.

The parent builds and warms the engines once, then forks: workers share the loaded lexicon and tables
copy-on-write. Each worker runs its patients, oldest session first as always, in a scratch database of
its own and writes their results files; the parent only hands out folders and adds up the counts.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .results import results_problems
from .runner import replay_patient
from .timing import ReplayTimings


@dataclass
class PatientOutcome:
    folder: str
    sessions: int = 0
    patient_turns: int = 0
    problems: list[str] = field(default_factory=list)
    error: str = ""  # a dataset problem (transcript not imported): the command stops on it
    engine_seconds: dict[str, float] = field(default_factory=dict)
    engine_cpu: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    cpu: float = 0.0  # this worker's CPU seconds for the patient, engines included


def replay_one(*, folder: Path, out: Path, engine: str | None, timings: ReplayTimings) -> PatientOutcome:
    """One patient in the current database: replay, check and write its results file."""
    from reconcile_app.transcripts.models import Turn

    before = (timings.extraction, timings.reconciliation, dict(timings.cpu), dict(timings.calls), time.thread_time())
    outcome = PatientOutcome(folder=folder.name)
    try:
        run = replay_patient(folder=folder, engine=engine)
    except ValueError as exc:
        outcome.error = str(exc)
        return outcome
    outcome.sessions = run.sessions
    outcome.patient_turns = Turn.objects.filter(session__patient__fhir_id=run.results["patient"].split("/", 1)[-1],
                                                speaker=Turn.Speaker.PATIENT, session__withdrawn_at__isnull=True).count()
    for failure in run.failed:
        outcome.problems.append(f"{folder.name} session {failure['session']}: {failure['error'] or 'not processed'}")
    outcome.problems += [f"{folder.name}: {problem}" for problem in results_problems(run.results)]
    (out / f"{folder.name}.json").write_text(json.dumps(run.results, ensure_ascii=False, indent=2), encoding="utf-8")
    outcome.engine_seconds = {"extraction": timings.extraction - before[0], "reconciliation": timings.reconciliation - before[1]}
    outcome.engine_cpu = {k: timings.cpu[k] - before[2].get(k, 0.0) for k in ("extraction", "reconciliation")}
    outcome.calls = {k: timings.calls[k] - before[3].get(k, 0) for k in timings.calls}
    outcome.cpu = time.thread_time() - before[4]
    return outcome


# Set in the parent before forking; read by the workers (fork start method: inherited, not pickled).
_WORKER: dict[str, Any] = {}


def _worker_init(scratch_dir: str) -> None:
    from django.db import connections

    from .scratch import celery_in_process, scratch_database

    connections.close_all()  # never share the parent's connection across the fork
    # Entered for the worker's lifetime: the parent removes scratch_dir when every worker is done.
    for context in (scratch_database(Path(scratch_dir) / f"worker-{os.getpid()}.sqlite3"), celery_in_process()):
        context.__enter__()
        _WORKER.setdefault("contexts", []).append(context)


def _worker_run(folder: str) -> PatientOutcome:
    return replay_one(folder=Path(folder), out=_WORKER["out"], engine=_WORKER["engine"], timings=_WORKER["timings"])


def replay_parallel(*, folders: list[Path], out: Path, engine: str | None, jobs: int, timings: ReplayTimings,
                    scratch_dir: Path) -> Iterator[PatientOutcome]:
    """Outcomes as patients finish; the largest transcripts start first so no worker is left with one at the end."""
    from django.db import connections

    _WORKER.update(out=out, engine=engine, timings=timings)
    ordered = sorted(folders, key=lambda f: (f / "transcript.json").stat().st_size, reverse=True)
    connections.close_all()
    context = multiprocessing.get_context("fork")
    with context.Pool(processes=jobs, initializer=_worker_init, initargs=(str(scratch_dir),)) as pool:
        yield from pool.imap_unordered(_worker_run, [str(f) for f in ordered], chunksize=1)
