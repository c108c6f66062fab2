"""Cue words and patterns of the rules extractor, loaded from reviewed data (narrative/data/cues/*.json), each with its source."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from reconcile_app.core.cues import cues_load

CUES_DIR = Path(__file__).resolve().parent.parent / "data" / "cues"


@lru_cache(maxsize=1)
def _cues() -> dict[str, dict[str, Any]]:
    return cues_load(sorted(CUES_DIR.glob("*.json")))


def cue_pattern(cue_id: str) -> re.Pattern[str]:
    return re.compile(_cues()[cue_id]["pattern"])


def cue_text(cue_id: str) -> str:
    """A pattern fragment that other patterns are built from (an alternation of names)."""
    return str(_cues()[cue_id]["pattern"])


def cue_words(cue_id: str) -> frozenset[str]:
    return frozenset(_cues()[cue_id]["words"])


def cue_rules(cue_id: str) -> list[dict[str, str]]:
    """Patterns with what each one means (an action, a status), in the order they are tried."""
    return list(_cues()[cue_id]["rules"])
