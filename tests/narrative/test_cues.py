"""The extractor's cue words and patterns are reviewed data: each names its family, phenomenon and source, and compiles."""
from __future__ import annotations

import json
import re

from reconcile_app.narrative.engines import cues


def test_every_cue_names_its_family_phenomenon_and_source() -> None:
    files = sorted(cues.CUES_DIR.glob("*.json"))
    assert files
    for path in files:
        for cue_id, cue in json.loads(path.read_text(encoding="utf-8"))["cues"].items():
            assert cue["family"] and len(cue["phenomenon"].split()) >= 3 and len(cue["source"]) > 8, cue_id
            assert sum(k in cue for k in ("pattern", "words", "rules")) == 1, cue_id
            for rule in cue.get("rules", []):
                assert rule.get("pattern") or rule.get("words"), (cue_id, rule)  # each rule says what it reads
            regexes = [cue.get("pattern")] + [r.get(key) for r in cue.get("rules", []) for key in ("pattern", "display")]
            for pattern in regexes:
                if pattern:
                    re.compile(pattern)


def test_the_action_rules_read_what_they_name() -> None:
    rules = [(re.compile(r["pattern"]), r["action"]) for r in cues.cue_rules("action_rx")]
    first = lambda text: next(action for rx, action in rules if rx.search(text))  # noqa: E731
    assert first("i split the tablet in half this week") == "changed_dose"
    assert first("went back on the inhaler") == "resumed"
    assert first("ditched the pills after a few days") == "stopped"
