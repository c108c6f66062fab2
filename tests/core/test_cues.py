"""Cue files merge into one table and refuse an id defined twice."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconcile_app.core.cues import cues_load


def _file(path: Path, cues: dict) -> Path:
    path.write_text(json.dumps({"description": "t", "cues": cues}), encoding="utf-8")
    return path


def test_cues_of_several_files_merge_in_order(tmp_path: Path) -> None:
    a = _file(tmp_path / "a.json", {"stop": {"pattern": "stop"}})
    b = _file(tmp_path / "b.json", {"start": {"pattern": "start"}})
    assert list(cues_load([a, b])) == ["stop", "start"]


def test_a_cue_defined_twice_is_refused(tmp_path: Path) -> None:
    a = _file(tmp_path / "a.json", {"stop": {"pattern": "stop"}})
    b = _file(tmp_path / "b.json", {"stop": {"pattern": "quit"}})
    with pytest.raises(ValueError, match="b.json: cue 'stop' is already defined"):
        cues_load([a, b])
