"""Run the extraction engine over a dataset folder (no database) and report what it missed and what traps it fell for."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reconcile_app.narrative.engines import get_extractor
from reconcile_app.narrative.engines.coverage import PatientCoverage, coverage_for_patient, pct
from reconcile_app.narrative.engines.devset import load_case, patient_folders
from reconcile_app.narrative.types import MemoryDraft


class Command(BaseCommand):
    help = ("Per patient: scenario turns with no patient-subject affirmed memory of the scenario's category, "
            "and trap turns with a patient-subject affirmed clinical memory; totals with percentages.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", type=Path)
        parser.add_argument("--patients", default="", help="comma-separated folder names, e.g. p01,p02")
        parser.add_argument("--engine", default=None, help="extraction engine (default: EXTRACTION_ENGINE)")
        parser.add_argument("--json", dest="json_out", type=Path, default=None, help="also write the figures as JSON here")
        parser.add_argument("--quiet", action="store_true", help="totals only")

    def handle(self, *args: Any, **opts: Any) -> None:
        dataset: Path = opts["dataset"]
        if not dataset.is_dir():
            raise CommandError(f"{dataset} is not a folder")
        only = {p.strip() for p in opts["patients"].split(",") if p.strip()} or None
        folders = patient_folders(dataset, only)
        if not folders:
            raise CommandError("no patient folders matched")
        extractor = get_extractor(opts["engine"])
        results: list[PatientCoverage] = []
        started = time.perf_counter()
        for folder in folders:
            case = load_case(folder)
            drafts: list[MemoryDraft] = []
            for session in case.sessions:
                drafts.extend(extractor.extract_session(session, prior=[d for d in drafts if d.is_patient_affirmed], record=case.record))
            cov = coverage_for_patient(case.key, case.labels, drafts)
            results.append(cov)
            if not opts["quiet"]:
                self._patient(cov)
        elapsed = time.perf_counter() - started
        summary = self._totals(results, extractor, elapsed)
        if opts["json_out"]:
            opts["json_out"].write_text(json.dumps(summary, indent=2), encoding="utf-8")

    def _patient(self, cov: PatientCoverage) -> None:
        hit = len(cov.scenario_turns) - len(cov.scenario_missed)
        self.stdout.write(f"{cov.key}: scenario turns {hit}/{len(cov.scenario_turns)}; trap violations "
                          f"{len(cov.trap_violations)}/{len(cov.trap_turns)}")
        for t in cov.scenario_missed:
            self.stdout.write(f"  missed   {t.ref} {t.turn_id} [{t.category}] got: {t.note or '-'}")
        for t in cov.trap_violations:
            self.stdout.write(f"  trap     {t.ref} {t.turn_id} [{t.category}] {t.note}")

    def _totals(self, results: list[PatientCoverage], extractor: Any, elapsed: float) -> dict[str, Any]:
        sc = sum(len(r.scenario_turns) for r in results)
        sc_hit = sc - sum(len(r.scenario_missed) for r in results)
        tr = sum(len(r.trap_turns) for r in results)
        tr_bad = sum(len(r.trap_violations) for r in results)
        op = sum(len(r.other_person_trap_turns) for r in results)
        op_bad = sum(1 for r in results for t in r.other_person_trap_turns if t.hit)
        self.stdout.write(f"TOTAL engine={extractor.name} {extractor.version} patients={len(results)} ({elapsed:.1f}s)")
        self.stdout.write(f"  scenario turns with a patient affirmed memory of their category: {sc_hit}/{sc} ({pct(sc_hit, sc)})")
        self.stdout.write(f"  trap turns with a patient affirmed clinical memory: {tr_bad}/{tr} ({pct(tr_bad, tr)})")
        self.stdout.write(f"  other-person trap turns with any patient-subject clinical memory: {op_bad}/{op} ({pct(op_bad, op)})")
        return {
            "engine": extractor.name, "engine_version": extractor.version, "patients": [r.key for r in results],
            "scenario_turns": sc, "scenario_turns_hit": sc_hit, "trap_turns": tr, "trap_turns_violated": tr_bad,
            "other_person_trap_turns": op, "other_person_trap_turns_violated": op_bad,
            "missed": [{"patient": r.key, "ref": t.ref, "turn": t.turn_id, "category": t.category} for r in results for t in r.scenario_missed],
        }
