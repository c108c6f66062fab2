"""Cue files as reviewed data: JSON files of {"cues": {id: {...}}} merged into one table, an id defined once."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def cues_load(paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Every cue of these files, in order; a cue id defined in two files is an error (one would silently win)."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        for cue_id, cue in json.loads(path.read_text(encoding="utf-8"))["cues"].items():
            if cue_id in out:
                raise ValueError(f"{path.name}: cue {cue_id!r} is already defined")
            out[cue_id] = cue
    return out
