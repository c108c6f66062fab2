"""Plain-text tables of the scores (pure functions over `scoring.Scores`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .scoring import Scores, score_patient

RATES = (
    "detection_rate", "turn_level_detection", "resource_informed_detection", "safety_recall", "safety_recall_strict",
    "severity_exact", "severity_within_one", "kind_accuracy", "resource_recall", "resource_precision",
)
RATIOS = ("false_discrepancies_per_plain_session",)
COUNTS = ("scenarios", "safety_scenarios", "plain_sessions", "false_discrepancies", "false_contradictions", "traps", "trap_violations")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def score_dataset(*, dataset: Path, results: dict[str, dict], only: list[str] | None = None) -> tuple[Scores, list[str]]:
    """Score every patient folder with labels; a missing results file counts as no findings."""
    total = Scores()
    missing: list[str] = []
    for folder in sorted(p for p in dataset.iterdir() if p.is_dir() and (p / "labels.json").is_file()):
        if only and folder.name not in only:
            continue
        transcript = load_json(folder / "transcript.json")
        if folder.name not in results:
            missing.append(folder.name)
        session_ids = [s["id"] for s in transcript.get("sessions", [])]
        total.merge(score_patient(labels=load_json(folder / "labels.json"), results=results.get(folder.name, {}), session_ids=session_ids))
    return total, missing


def _fmt(name: str, value: float | int) -> str:
    if name in RATES:
        return f"{value:7.1%}"
    return f"{value:7.2f}" if name in RATIOS else f"{value:7d}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _clip(text: str, width: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def scores_report(scores: Scores, *, title: str = "End to end (Dimension 3)") -> str:
    summary = scores.summary()
    parts = [title, "", _table(["score", "value"], [[k, _fmt(k, summary[k]).strip()] for k in (*RATES, *COUNTS, *RATIOS)])]
    for attr, label in (("category", "By category"), ("kind", "By kind")):
        rows = [[key, str(v["scenarios"]), f"{v['detection_rate']:.1%}", f"{v['resource_informed_detection']:.1%}"]
                for key, v in scores.breakdown(attr).items()]
        parts += ["", label, _table([attr, "scenarios", "detected", "resource-informed"], rows)]
    missed = [s for s in scores.scenarios if not s.detected]
    parts += ["", f"Missed scenarios ({len(missed)})"]
    parts += [f"  {s.patient} {s.scenario_id} [{s.kind}/{s.category}/{s.severity_label}{'/safety' if s.safety_critical else ''}] {_clip(s.summary)}"
              for s in missed] or ["  none"]
    parts += ["", f"False discrepancies ({len(scores.false_discrepancies)})"]
    parts += [f"  {f['patient']} {f['session_id']} {','.join(f['turn_ids'])} [{f['kind']}/{f['severity']}] memory: {_clip(f['memory'], 70)} | {_clip(f['explanation'], 70)}"
              for f in scores.false_discrepancies] or ["  none"]
    parts += ["", f"Trap violations ({len(scores.trap_violations)})"]
    parts += [f"  {t['patient']} {t['session_id']} {','.join(t['turn_ids'] or [])} [{'/'.join(t['kinds'])}] {_clip(t['why'])}"
              for t in scores.trap_violations] or ["  none"]
    return "\n".join(parts)


def cascade_report(end_to_end: Scores, isolated: Scores) -> str:
    """Dimension 2 against Dimension 3: what extraction loses before reconciliation sees it."""
    e2e, iso = end_to_end.summary(), isolated.summary()
    rows = [[k, f"{iso[k]:.1%}", f"{e2e[k]:.1%}", f"{iso[k] - e2e[k]:+.1%}"] for k in RATES]
    parts = ["Isolated (Dimension 2) vs end to end (Dimension 3); cascade = isolated - end to end", "",
             _table(["score", "isolated", "end-to-end", "cascade"], rows)]
    by_e2e, by_iso = end_to_end.breakdown("category"), isolated.breakdown("category")
    cat_rows = []
    for key in sorted(set(by_e2e) | set(by_iso)):
        i = by_iso.get(key, {}).get("detection_rate", 0.0)
        e = by_e2e.get(key, {}).get("detection_rate", 0.0)
        cat_rows.append([key, f"{i:.1%}", f"{e:.1%}", f"{i - e:+.1%}"])
    parts += ["", "Detection by category", _table(["category", "isolated", "end-to-end", "cascade"], cat_rows)]
    lost = {(s.patient, s.scenario_id) for s in isolated.scenarios if s.detected} - {(s.patient, s.scenario_id) for s in end_to_end.scenarios if s.detected}
    parts += ["", f"Detected in isolation but missed end to end ({len(lost)}): extraction errors that cascade"]
    parts += [f"  {s.patient} {s.scenario_id} {_clip(s.summary)}" for s in isolated.scenarios if (s.patient, s.scenario_id) in lost] or ["  none"]
    return "\n".join(parts)
