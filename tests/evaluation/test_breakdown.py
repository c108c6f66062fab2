"""evaluation/breakdown.py: false alarms and traps taken counted by how they were raised, never with text or ids;
bench/sealed_eval.py refuses the breakdown outside the validation split."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from reconcile_app.evaluation.breakdown import breakdown, breakdown_report, learned_change, origin_of, rule_family, trap_phenomenon
from reconcile_app.evaluation.scoring import score_patient

ROOT = Path(__file__).resolve().parents[2]


def _finding(fid: str, session: str, turn: str, kind: str, rule: str, *, origin: str = "rules", safety: bool = False) -> dict:
    return {"id": fid, "memory_id": f"m{fid}", "session_id": session, "turn_ids": [turn], "kind": kind, "severity": "high",
            "safety_critical": safety, "fhir_refs": [], "explanation": "SECRET EXPLANATION", "category": "medication",
            "rule": rule, "origin": origin, "learned": "-"}


def _scores():
    labels = {"patient": "Patient/x", "scenarios": [{"id": "x-sc1", "session_id": "s1", "turn_ids": ["s1-t1"], "kind": "gap",
                                                     "category": "medication", "summary": "s", "severity": "low"}],
              "traps": [{"session_id": "s2", "turn_ids": ["s2-t3"], "why": "her brother's tablets, not hers"}]}
    results = {"patient": "Patient/x",
               "memories": [{"id": f"m{i}", "content": "SECRET MEMORY"} for i in ("f1", "f2", "f3")],
               "findings": [_finding("f1", "s2", "s2-t3", "gap", "med-undocumented-otc"),
                            _finding("f2", "s3", "s3-t1", "contradiction", "judge-raise:med-active-agrees", origin="judge-raise"),
                            _finding("f3", "s3", "s3-t2", "agreement", "med-active-agrees")]}
    return score_patient(labels=labels, results=results, session_ids=["s1", "s2", "s3"])


def test_breakdown_counts_false_alarms_by_origin_and_rule_family():
    b = breakdown(_scores())
    assert b["false_discrepancies"] == 2 and b["plain_sessions"] == 2
    assert ["judge-raise", "med-active", 1] in b["false_by_rule"] and ["rules", "med-undocumented", 1] in b["false_by_rule"]
    assert dict((r[0], r[1]) for r in b["false_by"]["kind"]) == {"contradiction": 1, "gap": 1}


def test_breakdown_sorts_a_trap_taken_by_its_phenomenon():
    b = breakdown(_scores())
    assert b["trap_violations"] == 1 and b["traps_by_rule"] == [["other-person", "rules", "med-undocumented", 1]]


def test_breakdown_report_holds_no_text_and_no_ids():
    report = breakdown_report(breakdown(_scores())) + json.dumps(breakdown(_scores()))
    for secret in ("SECRET", "brother", "Patient/x", "s2-t3", "s3", "x-sc1"):
        assert secret not in report


def test_origin_is_read_from_the_rule_and_the_judges_notes():
    assert origin_of("judge-raise:condition-mention") == "judge-raise"
    assert origin_of("redflag-chest-pain", ["judge 0.10 (x): kept (safety floor: the tables flag it safety-critical)"]) == "safety-floor"
    assert origin_of("med-dose-mismatch", ["judge 0.90 (x)"]) == "rules"
    assert rule_family("judge-raise:symptom-unflagged") == "symptom-unflagged"
    assert rule_family("redflag-melena+reread") == "redflag-melena"
    assert learned_change(["kind gap -> contradiction (learned: a, b)", "safety-critical at 0.71 (learned: c)"]) == "kind+safety"


def test_trap_phenomena_from_made_up_reasons():
    assert trap_phenomenon("an uncle's inhaler") == "other-person"
    assert trap_phenomenon("what a radio ad said about a pill") == "hearsay-media"
    assert trap_phenomenon("sore muscles from gardening") == "other"
    assert trap_phenomenon("saw it on the news") == "hearsay-media"
    assert trap_phenomenon("a question about whether to start it") == "hypothetical-plan"
    assert trap_phenomenon("the knee surgery years ago, already in the chart") == "retold-past"
    assert trap_phenomenon("takes the statin as prescribed") == "agrees-with-record"


def _sealed_eval():
    spec = importlib.util.spec_from_file_location("sealed_eval", ROOT / "bench" / "sealed_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_sealed_eval_refuses_a_breakdown_of_the_sealed_and_fresh_splits(tmp_path: Path, capsys):
    sealed_eval = _sealed_eval()
    archive = tmp_path / "never-opened.tar.gz"
    assert sealed_eval.main(["--breakdown", "--archive", str(archive), "--log", str(tmp_path / "log")]) == 2
    assert sealed_eval.main(["--fresh", "--breakdown"]) == 2
    assert "validation split only" in capsys.readouterr().err
    assert not (tmp_path / "log").exists()
