"""The reconciler's cue words and patterns are reviewed data: each names its family, phenomenon and source, and compiles."""
from __future__ import annotations

import json
import re

from reconcile_app.reconciliation.engines.rules import cues


def test_every_cue_names_its_family_phenomenon_and_source() -> None:
    data = cues._load_cues()  # cues.json and data/cues/*.json
    assert data and set(json.loads(cues.CUES_PATH.read_text(encoding="utf-8"))["cues"]) <= set(data)
    for cue_id, cue in data.items():
        assert cue["family"] and len(cue["phenomenon"].split()) >= 3 and len(cue["source"]) > 8, cue_id
        assert sum(k in cue for k in ("pattern", "words", "numbers")) == 1, cue_id
        if "pattern" in cue:
            re.compile(cue["pattern"])


def test_cues_read_the_phenomena_they_name() -> None:
    assert cues.STOP.search("i ran out of it last week") and not cues.STOP.search("i take it every morning")
    assert cues.HALF.search("i cut them in half to make them last")
    assert cues.THIRD_PERSON.search("her doctor started her on a statin")
    assert cues.OCCASIONAL.search("only when i need it") and not cues.OCCASIONAL.search("every single morning")
