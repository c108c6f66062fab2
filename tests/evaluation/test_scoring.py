"""The kind confusion: counts of labelled against found kinds, per category, from the finding that speaks for a session."""
from __future__ import annotations

from reconcile_app.evaluation.breakdown import breakdown, breakdown_report
from reconcile_app.evaluation.scoring import score_patient

WARFARIN = {"resourceType": "MedicationRequest", "id": "rx-warfarin", "system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "855332"}
CPAP = {"resourceType": "CarePlan", "id": "plan-osa"}
LABELS = {
    "patient": "Patient/p",
    "scenarios": [
        {"id": "a", "session_id": "s1", "turn_ids": ["s1-t2"], "kind": "contradiction", "category": "medication", "fhir_refs": [WARFARIN]},
        {"id": "b", "session_id": "s2", "turn_ids": ["s2-t2"], "kind": "contradiction", "category": "careplan", "fhir_refs": [CPAP]},
        {"id": "c", "session_id": "s3", "turn_ids": ["s3-t2"], "kind": "gap", "category": "medication", "fhir_refs": [WARFARIN]},
    ],
}


def _finding(session: str, kind: str, severity: str, refs: list[dict], rule: str, origin: str) -> dict:
    return {"session_id": session, "turn_ids": [f"{session}-t2"], "kind": kind, "severity": severity, "fhir_refs": refs,
            "category": "medication", "rule": rule, "origin": origin, "learned": "-", "explanation": "SECRET"}


def test_the_kind_of_the_finding_citing_the_expected_entry_is_counted_and_an_undetected_scenario_is_missed():
    results = {"findings": [
        # a more severe gap citing nothing expected does not speak for the session: the contradiction citing warfarin does
        _finding("s1", "gap", "high", [], "redflag-bleeding", "rules"),
        _finding("s1", "contradiction", "medium", [WARFARIN], "med-stopped-active", "rules"),
        _finding("s2", "gap", "low", [CPAP], "judge-raise:care-activity", "judge-raise"),
    ]}
    counts = breakdown(score_patient(labels=LABELS, results=results, session_ids=["s1", "s2", "s3"]))
    assert sorted(counts["kind_confusion"]) == [
        ["careplan", "contradiction", "gap", 1],
        ["medication", "contradiction", "contradiction", 1],
        ["medication", "gap", "missed", 1],
    ]
    assert counts["kind_wrong_by"] == [["contradiction", "gap", "judge-raise", "-", "care-activity", 1]]
    report = breakdown_report(counts)
    assert "careplan/contradiction/gap" in report and "SECRET" not in report
