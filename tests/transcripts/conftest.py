"""Fixtures for transcripts: a patient with a record, transcript builders, fake engines."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.services import snapshot_import_bundle

from .fakes import FakeExtractor, FakeReconciler, fakes_installed

DATA = Path(__file__).parent / "data"


@pytest.fixture
def patient(db: None) -> Patient:
    return snapshot_import_bundle(bundle=json.loads((DATA / "bundle_small.json").read_text())).patient


@pytest.fixture
def fake_engines() -> Iterator[tuple[FakeExtractor, FakeReconciler]]:
    with fakes_installed() as fakes:
        yield fakes


def transcript_bytes(*, patient: str = "Patient/pt-test-1", sessions: int = 2, start_day: int = 5, texts: dict[str, str] | None = None, prefix: str = "s") -> bytes:
    """A coaching-transcript/v1 file: session i has a coach turn and a patient turn."""
    texts = texts or {}
    out = []
    for i in range(1, sessions + 1):
        sid = f"{prefix}{i:02d}"
        day = f"2026-01-{start_day + i:02d}"
        out.append({
            "id": sid,
            "started_at": f"{day}T18:00:00-05:00",
            "turns": [
                {"id": f"{sid}-t01", "speaker": "coach", "at": f"{day}T18:00:00-05:00", "text": "How was the week?"},
                {"id": f"{sid}-t02", "speaker": "patient", "at": f"{day}T18:01:00-05:00", "text": texts.get(sid, f"Walked every day ({sid}).")},
            ],
        })
    return json.dumps({"format": "coaching-transcript/v1", "patient": patient, "sessions": out}).encode()
