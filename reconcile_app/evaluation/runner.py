"""Replay a dataset through the production services, in-process and in order (used by the commands)."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconcile_app.fhir.services import snapshot_import_bundle
from reconcile_app.pipeline import pipeline_patient_drain
from reconcile_app.transcripts.models import Session, Upload
from reconcile_app.transcripts.services import upload_import, upload_receive

from .results import results_for_patient


@dataclass
class PatientRun:
    folder: str
    results: dict[str, Any]
    sessions: int
    failed: list[dict[str, str]] = field(default_factory=list)


def dataset_folders(dataset: Path, only: list[str] | None = None) -> list[Path]:
    folders = sorted(p for p in dataset.iterdir() if p.is_dir() and (p / "bundle.json").is_file() and (p / "transcript.json").is_file())
    if only:
        wanted = set(only)
        unknown = wanted - {p.name for p in folders}
        if unknown:
            raise ValueError(f"no such patient folder(s): {', '.join(sorted(unknown))}")
        folders = [p for p in folders if p.name in wanted]
    return folders


def replay_patient(
    *,
    folder: Path,
    transcript_bytes: bytes | None = None,
    engine: str | None = None,
    on_session: Callable[[Session], None] | None = None,
) -> PatientRun:
    """bundle.json as the record, transcript.json through the import service, then the pipeline."""
    bundle = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
    snapshot = snapshot_import_bundle(bundle=bundle)
    raw = transcript_bytes if transcript_bytes is not None else (folder / "transcript.json").read_bytes()
    upload = upload_receive(raw=raw, filename="transcript.json", source=Upload.Source.REPLAY)
    upload = upload_import(upload_id=upload.pk, start_pipeline=False)
    if upload.status != Upload.Status.IMPORTED:
        detail = "; ".join(upload.errors[:5]) or f"upload is {upload.status} (patient {upload.patient_ref or '?'} not matched)"
        raise ValueError(f"{folder.name}: transcript not imported: {detail}")
    pipeline_patient_drain(patient_id=snapshot.patient_id, engine=engine, on_session=on_session)
    failed = [
        {"session": s.external_id, "error": s.pipeline_error}
        for s in Session.objects.filter(patient_id=snapshot.patient_id).exclude(pipeline_status=Session.Pipeline.DONE)
    ]
    sessions = Session.objects.filter(patient_id=snapshot.patient_id).count()
    return PatientRun(folder=folder.name, results=results_for_patient(patient=snapshot.patient), sessions=sessions, failed=failed)


_FIRST_PERSON = {"she": "I", "he": "I", "her": "my", "his": "my", "him": "me", "hers": "mine", "herself": "myself", "himself": "myself"}
_PRONOUN_RE = re.compile(r"\b(" + "|".join(_FIRST_PERSON) + r")\b", re.IGNORECASE)


def first_person(summary: str) -> str:
    """Labels describe the patient in the third person ("stopped her lisinopril"); the engines read
    the patient's own words, where "her" means someone else. Pronouns are put in the first person so
    the statement reaches them as the patient would say it; everything else is left as written."""
    return _PRONOUN_RE.sub(lambda m: _FIRST_PERSON[m.group(0).lower()], summary)


def isolated_transcript(*, transcript: dict[str, Any], labels: dict[str, Any]) -> bytes:
    """Dimension 2 input: each scenario's ground-truth summary (in the first person) as the
    patient's turn, on its own session and first turn id (same times as the real conversation)."""
    sessions = {s["id"]: s for s in transcript.get("sessions", [])}
    order = {s["id"]: i for i, s in enumerate(transcript.get("sessions", []))}
    out = []
    for sc in sorted(labels.get("scenarios", []), key=lambda sc: order.get(sc["session_id"], 0)):
        original = sessions[sc["session_id"]]
        turn_id = (sc.get("turn_ids") or [f"{sc['session_id']}-t01"])[0]
        at = next((t["at"] for t in original["turns"] if t["id"] == turn_id), original["started_at"])
        out.append({"id": sc["session_id"], "started_at": original["started_at"],
                    "turns": [{"id": turn_id, "speaker": "patient", "at": at, "text": first_person(sc["summary"])}]})
    doc = {"format": "coaching-transcript/v1", "patient": transcript.get("patient", ""), "sessions": out}
    return json.dumps(doc, ensure_ascii=False).encode()
