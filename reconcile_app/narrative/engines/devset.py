"""Reading a reconciliation dataset folder (FORMAT.md v1) into extractor inputs, without the database."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle
from reconcile_app.narrative.types import SessionInput, TurnInput


@dataclass
class PatientCase:
    key: str  # folder name ("p01")
    sessions: list[SessionInput]
    record: ClinicalRecord | None
    labels: dict[str, Any] = field(default_factory=dict)

    @property
    def patient_turns(self) -> int:
        return sum(1 for s in self.sessions for t in s.turns if t.speaker == "patient")


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def load_sessions(transcript: dict[str, Any]) -> list[SessionInput]:
    sessions = []
    for s in transcript.get("sessions") or []:
        turns = tuple(TurnInput(str(t["id"]), str(t.get("speaker") or ""), _dt(t["at"]), str(t.get("text") or ""))
                      for t in s.get("turns") or [])
        sessions.append(SessionInput(str(s["id"]), _dt(s["started_at"]), turns))
    return sessions


def load_case(folder: Path, *, with_labels: bool = True) -> PatientCase:
    transcript = json.loads((folder / "transcript.json").read_text(encoding="utf-8"))
    record = None
    bundle_path = folder / "bundle.json"
    if bundle_path.exists():
        record = build_clinical_record(resources_from_bundle(json.loads(bundle_path.read_text(encoding="utf-8"))))
    labels: dict[str, Any] = {}
    if with_labels and (folder / "labels.json").exists():
        labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    return PatientCase(folder.name, load_sessions(transcript), record, labels)


def patient_folders(dataset: Path, only: set[str] | None = None) -> list[Path]:
    return sorted(p for p in dataset.iterdir() if p.is_dir() and (p / "transcript.json").exists() and (not only or p.name in only))
