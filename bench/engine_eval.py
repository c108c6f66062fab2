"""End-to-end (and isolated) evaluation of extraction + reconciliation on a dataset dir, without a database.

    python bench/engine_eval.py ../shared/eval/dev                    # end to end, default engines
    python bench/engine_eval.py ../shared/eval/dev --isolated         # plus the isolated run and the cascade
    python bench/engine_eval.py ../shared/eval/dev --detail p01,p02   # print misses/false alarms for these only

Patients are split into a development group (--dev, default p01-p05) and the rest (held out); scores are
reported for each group and overall. Per-scenario details (summaries, quotes) are printed only for --detail
patients, so a held-out group can be measured without reading its texts.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

from reconcile_app.evaluation.breakdown import breakdown, breakdown_report, learned_change, origin_of  # noqa: E402
from reconcile_app.evaluation.scoring import Scores, score_patient  # noqa: E402
from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle  # noqa: E402
from reconcile_app.narrative.engines import get_extractor  # noqa: E402
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput  # noqa: E402
from reconcile_app.reconciliation.engines import get_reconciler  # noqa: E402
from reconcile_app.reconciliation.gate import citation_gate  # noqa: E402

SUMMARY_KEYS = [
    "scenarios", "detection_rate", "turn_level_detection", "resource_informed_detection", "safety_scenarios", "safety_recall",
    "safety_recall_strict", "severity_exact", "severity_within_one", "kind_accuracy", "resource_recall", "resource_precision",
    "plain_sessions", "false_discrepancies", "false_discrepancies_per_plain_session", "false_contradictions", "traps",
    "trap_violations",
]
TARGETS = {
    "detection_rate": (">=", 0.90), "resource_informed_detection": (">=", 0.85), "safety_recall_strict": (">=", 0.90),
    "severity_within_one": (">=", 0.90), "kind_accuracy": (">=", 0.85), "false_discrepancies_per_plain_session": ("<=", 0.05),
    "false_contradictions": ("<=", 0), "trap_violations": ("<=", 2),
}


def _dt(text: str) -> datetime:
    return datetime.fromisoformat(text)


def load_patient(folder: Path) -> tuple[dict, dict, dict]:
    return (json.loads((folder / n).read_text(encoding="utf-8")) for n in ("bundle.json", "transcript.json", "labels.json"))  # type: ignore[return-value]


def sessions_of(transcript: dict) -> list[SessionInput]:
    return [
        SessionInput(
            id=s["id"],
            started_at=_dt(s["started_at"]),
            turns=tuple(TurnInput(id=t["id"], speaker=t["speaker"], at=_dt(t["at"]), text=t["text"]) for t in s["turns"]),
        )
        for s in transcript.get("sessions", [])
    ]


class Runner:
    def __init__(self, extractor_name: str, engine_name: str) -> None:
        self.extractor = get_extractor(extractor_name)
        self.reconciler = get_reconciler(engine_name)
        self.timings: dict[str, float] = defaultdict(float)

    def run_session(self, session: SessionInput, record: ClinicalRecord, prior: list[MemoryDraft]) -> tuple[list[MemoryDraft], list]:
        t0 = time.perf_counter()
        memories = list(self.extractor.extract_session(session, prior=tuple(prior), record=record))
        t1 = time.perf_counter()
        drafts = self.reconciler.reconcile(memories, record, history=tuple(prior))
        drafts = [citation_gate(d, record) for d in drafts]
        t2 = time.perf_counter()
        self.timings["extract"] += t1 - t0
        self.timings["reconcile"] += t2 - t1
        if len(drafts) != len(memories):
            raise RuntimeError(f"engine returned {len(drafts)} findings for {len(memories)} memories")
        return memories, drafts


def _results_add(results: dict, session_id: str, memories: list[MemoryDraft], drafts: list) -> None:
    for memory, draft in zip(memories, drafts):
        mid = f"m{len(results['memories']) + 1}"
        results["memories"].append({
            "id": mid, "session_id": session_id, "turn_ids": list(memory.turn_ids), "subject": memory.subject,
            "category": memory.category, "content": memory.content, "assertion": memory.assertion, "quote": memory.quote,
        })
        results["findings"].append({
            "id": f"f{len(results['findings']) + 1}", "memory_id": mid, "session_id": session_id, "turn_ids": list(memory.turn_ids),
            "kind": draft.kind, "severity": draft.severity, "safety_critical": draft.safety_critical, "category": draft.category,
            "fhir_refs": [c.as_dict() for c in draft.citations], "explanation": draft.explanation, "rule": draft.rule,
            "gate_notes": list(draft.gate_notes), "origin": origin_of(draft.rule, draft.gate_notes),
            "learned": learned_change(draft.gate_notes),
        })


def run_end_to_end(runner: Runner, folder: Path) -> tuple[dict, Scores, ClinicalRecord, dict[str, list[MemoryDraft]]]:
    bundle, transcript, labels = load_patient(folder)
    record = build_clinical_record(resources_from_bundle(bundle))
    results: dict[str, Any] = {"patient": transcript.get("patient", ""), "memories": [], "findings": []}
    prior: list[MemoryDraft] = []
    before: dict[str, list[MemoryDraft]] = {}
    sessions = sessions_of(transcript)
    for session in sessions:
        before[session.id] = list(prior)
        memories, drafts = runner.run_session(session, record, prior)
        _results_add(results, session.id, memories, drafts)
        prior.extend(memories)
    scores = score_patient(labels=labels, results=results, session_ids=[s.id for s in sessions])
    return results, scores, record, before


_FIRST_PERSON = [
    (r"^(?:Says|Reports|States|Mentions|Notes) (?:that )?(?:she|he|they) (?:is|was)\b", "I am"),
    (r"^(?:Says|Reports|States|Mentions|Notes) (?:that )?(?:she|he|they) has\b", "I have"),
    (r"^(?:Says|Reports|States|Mentions|Notes) (?:that )?(?:she|he|they)\b", "I"),
    (r"^Still (\w+?)s\b", r"I still \1"),
    (r"^Has\b", "I have"), (r"^Had\b", "I had"), (r"^Is\b", "I am"), (r"^Was\b", "I was"),
    (r"^(?=[A-Z][a-z]+(?:ed|s)\b)", "I "),
    (r"\b(?:she|he)(?:'s| is)\b", "I'm"), (r"\b(?:she|he) has\b", "I have"), (r"\b(?:she|he) was\b", "I was"),
    (r"^(?:Her|His|Their)\b", "My"),
    # "her" as an object ("brought her up", "gave her a", "told her.") is "me", not "my"
    (r"\bher\b(?=\s+(?:up|down|out|off|back|home|to|into|on|over|a|an|the|some|that|this|it)\b|[.,;!?]|$)", "me"),
    (r"\b(?:she|he|they)\b", "I"), (r"\b(?:her|his|their)\b(?=\s)", "my"), (r"\b(?:him|her|them)\b", "me"),
    (r"\b(?:herself|himself)\b", "myself"),
]


def first_person(summary: str) -> str:
    """A label summary ("Has been taking only half of her lisinopril") as the patient would say it."""
    import re

    text = summary.strip()
    for pattern, repl in _FIRST_PERSON:
        text = re.sub(pattern, repl, text, count=1 if pattern.startswith("^") else 0)
    if text.startswith("I ") and re.match(r"I [A-Z][a-z]+(?:ed|s)\b", text):
        text = "I " + text[2].lower() + text[3:]
    return re.sub(r"\bI (\w+?)s\b", lambda m: f"I {m.group(1)}" if m.group(1) in ("take", "use", "say", "feel", "want", "need", "think") else m.group(0), text)


def run_isolated(runner: Runner, folder: Path, record: ClinicalRecord, before: dict[str, list[MemoryDraft]]) -> tuple[dict, Scores]:
    """Each scenario's summary as a synthetic patient turn on its session/turn ids, through extraction and reconciliation.

    Summaries describe the patient in the third person; they are turned into first person (pronouns only) so that
    the synthetic turn reads as the patient's own words rather than as someone else's facts.
    """
    _, transcript, labels = load_patient(folder)
    turn_at = {t["id"]: _dt(t["at"]) for s in transcript.get("sessions", []) for t in s["turns"]}
    results: dict[str, Any] = {"patient": transcript.get("patient", ""), "memories": [], "findings": []}
    scenario_sessions = []
    for sc in labels.get("scenarios", []):
        turn_id = sc["turn_ids"][0]
        at = turn_at.get(turn_id) or _dt(next(s["started_at"] for s in transcript["sessions"] if s["id"] == sc["session_id"]))
        session = SessionInput(id=sc["session_id"], started_at=at, turns=(TurnInput(id=turn_id, speaker="patient", at=at, text=first_person(sc["summary"])),))
        memories, drafts = runner.run_session(session, record, before.get(sc["session_id"], []))
        _results_add(results, sc["session_id"], memories, drafts)
        scenario_sessions.append(sc["session_id"])
    iso_labels = dict(labels, traps=[])  # the isolated run has no trap turns
    return results, score_patient(labels=iso_labels, results=results, session_ids=scenario_sessions)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def print_table(columns: dict[str, dict[str, Any]]) -> None:
    names = list(columns)
    print(f"{'score':42s}" + "".join(f"{n:>14s}" for n in names) + "   target")
    for key in SUMMARY_KEYS:
        target = TARGETS.get(key)
        row = f"{key:42s}" + "".join(f"{_fmt(columns[n].get(key, '')):>14s}" for n in names)
        if target:
            row += f"   {target[0]} {target[1]}"
        print(row)


def print_breakdowns(scores: Scores, title: str) -> None:
    for attr in ("category", "kind"):
        print(f"\n{title}: by {attr}")
        for key, vals in scores.breakdown(attr).items():
            print(f"  {key:16s} n={vals['scenarios']:<3d} detection={vals['detection_rate']:.2f} resource_informed={vals['resource_informed_detection']:.2f}")


def print_details(scores: Scores, results_by_patient: dict[str, dict], detail: set[str]) -> None:
    missed = [s for s in scores.scenarios if s.scenario_id.split("-")[0] in detail and (not s.detected or not s.resource_informed or s.kind_found != s.kind
                                                                                         or (s.safety_critical and not s.flagged_safety))]
    print("\nScenario problems (detail patients only):")
    for s in missed:
        flags = []
        if not s.detected:
            flags.append("MISSED")
        else:
            if not s.resource_informed:
                flags.append("no-expected-citation")
            if s.kind_found != s.kind:
                flags.append(f"kind {s.kind_found}!={s.kind}")
            if s.safety_critical and not s.flagged_safety:
                flags.append("safety-unflagged")
            if s.severity_found != s.severity_label:
                flags.append(f"sev {s.severity_found}/{s.severity_label}")
        print(f"  {s.scenario_id} [{s.kind}/{s.category}/{s.severity_label}{'/SAFETY' if s.safety_critical else ''}] {' '.join(flags)} :: {s.summary[:110]}")
    print("\nFalse discrepancies (detail patients only):")
    for f in scores.false_discrepancies:
        pid = f["patient"]
        key = next((k for k, r in results_by_patient.items() if r["patient"] == pid), "")
        if key not in detail:
            continue
        print(f"  {key} {f['session_id']} {f['turn_ids']} {f['kind']}/{f['severity']} :: {f['memory'][:80]} || {f['explanation'][:100]}")
    print("\nTrap violations (detail patients only):")
    for t in scores.trap_violations:
        key = next((k for k, r in results_by_patient.items() if r["patient"] == t["patient"]), "")
        if key in detail:
            print(f"  {key} {t['session_id']} {t['turn_ids']} {t['kinds']} :: {t['why'][:100]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev"))
    parser.add_argument("--extractor", default="rules")
    parser.add_argument("--engine", default="rules")
    parser.add_argument("--isolated", action="store_true", help="also run each scenario summary in isolation and report the cascade")
    parser.add_argument("--dev", default="p01,p02,p03,p04,p05", help="the development group; the rest is reported as held out")
    parser.add_argument("--detail", default=None, help="patients whose misses and false alarms are printed (default: the dev group)")
    parser.add_argument("--patients", default="", help="only these patients")
    parser.add_argument("--breakdown", action="store_true", help="also print false discrepancies and traps taken in counts, by how they were raised")
    parser.add_argument("--out", default="", help="write per-patient results.json files into this folder")
    args = parser.parse_args(argv)

    dataset = Path(args.dataset)
    folders = sorted(p for p in dataset.iterdir() if (p / "labels.json").exists())
    if args.patients:
        wanted = set(args.patients.split(","))
        folders = [f for f in folders if f.name in wanted]
    dev = set(args.dev.split(",")) if args.dev else set()
    detail = set(args.detail.split(",")) if args.detail is not None else dev

    runner = Runner(args.extractor, args.engine)
    groups: dict[str, Scores] = {"dev": Scores(), "held_out": Scores(), "all": Scores()}
    iso_groups: dict[str, Scores] = {"dev": Scores(), "held_out": Scores(), "all": Scores()}
    results_by_patient: dict[str, dict] = {}
    started = time.perf_counter()
    for folder in folders:
        results, scores, record, before = run_end_to_end(runner, folder)
        results_by_patient[folder.name] = results
        group = "dev" if folder.name in dev else "held_out"
        groups[group].merge(scores)
        groups["all"].merge(scores)
        if args.isolated:
            _, iso = run_isolated(runner, folder, record, before)
            iso_groups[group].merge(iso)
            iso_groups["all"].merge(iso)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{folder.name}.results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    elapsed = time.perf_counter() - started

    print(f"dataset {dataset}  extractor={runner.extractor.name}/{runner.extractor.version}  engine={runner.reconciler.name}/{runner.reconciler.version}")
    print(f"patients {len(folders)} (dev {sorted(f.name for f in folders if f.name in dev)})  time {elapsed:.1f}s "
          f"(extract {runner.timings['extract']:.1f}s, reconcile {runner.timings['reconcile']:.1f}s)\n")
    columns = {f"e2e:{g}": s.summary() for g, s in groups.items() if s.scenarios or s.plain_sessions}
    if args.isolated:
        for g, s in iso_groups.items():
            if s.scenarios:
                iso = s.summary()
                columns[f"iso:{g}"] = iso
                e2e = groups[g].summary()
                columns[f"cascade:{g}"] = {k: iso[k] - e2e[k] for k in ("detection_rate", "turn_level_detection", "resource_informed_detection",
                                                                         "safety_recall", "safety_recall_strict", "severity_within_one", "kind_accuracy")}
    print_table(columns)
    if groups["dev"].scenarios:
        print_breakdowns(groups["dev"], "dev")
    if groups["held_out"].scenarios:
        print_breakdowns(groups["held_out"], "held out")
    if args.breakdown:
        print("\n" + breakdown_report(breakdown(groups["all"])))
    if detail:
        combined = Scores()
        combined.merge(groups["all"])
        print_details(combined, results_by_patient, detail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
