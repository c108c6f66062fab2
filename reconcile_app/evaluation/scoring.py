"""Scores of FORMAT.md (the dual-stream paper's evaluation) over results and labels: pure functions."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

DISCREPANCY = ("contradiction", "gap")
SEVERITY_RANK = {"low": 1, "medium": 2, "high": 3}


@dataclass
class ScenarioOutcome:
    patient: str
    scenario_id: str
    category: str
    kind: str
    summary: str
    safety_critical: bool
    detected: bool = False
    turn_detected: bool = False
    resource_informed: bool = False
    flagged_safety: bool = False
    severity_label: str = ""
    severity_found: str = ""
    kind_found: str = ""
    # the finding that speaks for the session (`_top`) as codes, no text: category, rule, origin, learned, safety flag
    speaker: dict[str, Any] = field(default_factory=dict)
    resource_recall: float = 0.0
    resource_precision: float = 0.0


@dataclass
class Scores:
    scenarios: list[ScenarioOutcome] = field(default_factory=list)
    plain_sessions: int = 0
    false_discrepancies: list[dict[str, Any]] = field(default_factory=list)
    traps: int = 0
    trap_violations: list[dict[str, Any]] = field(default_factory=list)

    def _rate(self, items: list[ScenarioOutcome], attr: str) -> float:
        return sum(1 for s in items if getattr(s, attr)) / len(items) if items else 0.0

    def summary(self) -> dict[str, float | int]:
        sc = self.scenarios
        detected = [s for s in sc if s.detected]
        safety = [s for s in sc if s.safety_critical]
        sev = [s for s in detected if s.severity_found]
        within = [s for s in sev if abs(SEVERITY_RANK[s.severity_found] - SEVERITY_RANK.get(s.severity_label, 0)) <= 1]
        false_contra = [f for f in self.false_discrepancies if f["kind"] == "contradiction"]
        return {
            "scenarios": len(sc),
            "detection_rate": self._rate(sc, "detected"),
            "turn_level_detection": self._rate(sc, "turn_detected"),
            "resource_informed_detection": self._rate(sc, "resource_informed"),
            "safety_scenarios": len(safety),
            "safety_recall": self._rate(safety, "detected"),
            "safety_recall_strict": sum(1 for s in safety if s.detected and s.flagged_safety) / len(safety) if safety else 0.0,
            "severity_exact": sum(1 for s in sev if s.severity_found == s.severity_label) / len(sev) if sev else 0.0,
            "severity_within_one": len(within) / len(sev) if sev else 0.0,
            "kind_accuracy": sum(1 for s in detected if s.kind_found == s.kind) / len(detected) if detected else 0.0,
            "resource_recall": sum(s.resource_recall for s in detected) / len(detected) if detected else 0.0,
            "resource_precision": sum(s.resource_precision for s in detected) / len(detected) if detected else 0.0,
            "plain_sessions": self.plain_sessions,
            "false_discrepancies": len(self.false_discrepancies),
            "false_discrepancies_per_plain_session": len(self.false_discrepancies) / self.plain_sessions if self.plain_sessions else 0.0,
            "false_contradictions": len(false_contra),
            "traps": self.traps,
            "trap_violations": len(self.trap_violations),
        }

    def breakdown(self, attr: str) -> dict[str, dict[str, float | int]]:
        groups: dict[str, list[ScenarioOutcome]] = defaultdict(list)
        for s in self.scenarios:
            groups[getattr(s, attr)].append(s)
        return {
            key: {
                "scenarios": len(items),
                "detection_rate": self._rate(items, "detected"),
                "resource_informed_detection": self._rate(items, "resource_informed"),
            }
            for key, items in sorted(groups.items())
        }

    def merge(self, other: Scores) -> None:
        self.scenarios.extend(other.scenarios)
        self.plain_sessions += other.plain_sessions
        self.false_discrepancies.extend(other.false_discrepancies)
        self.traps += other.traps
        self.trap_violations.extend(other.trap_violations)


def _ref_matches(cited: dict, expected: dict) -> bool:
    if cited.get("id") and cited.get("id") == expected.get("id") and cited.get("resourceType") == expected.get("resourceType"):
        return True
    return (
        bool(cited.get("code"))
        and cited.get("resourceType") == expected.get("resourceType")
        and cited.get("system") == expected.get("system")
        and cited.get("code") == expected.get("code")
    )


def _top(findings: list[dict], expected: list[dict]) -> dict:
    """The finding that speaks for a session: one citing an expected resource, then the most severe."""

    def key(f: dict) -> tuple[int, int, int]:
        informed = any(_ref_matches(c, e) for c in f.get("fhir_refs", []) for e in expected)
        return (int(informed), SEVERITY_RANK.get(f.get("severity", ""), 0), int(bool(f.get("safety_critical"))))

    return max(findings, key=key)


def _provenance(finding: dict) -> dict[str, Any]:
    """What a finding carries about how it was raised (codes, no text): evaluation/breakdown.py counts by these."""
    return {k: finding.get(k, "") for k in ("category", "rule", "origin", "learned")} | {"safety_critical": bool(finding.get("safety_critical"))}


def score_patient(*, labels: dict, results: dict, session_ids: list[str]) -> Scores:
    discrepancies = [f for f in results.get("findings", []) if f.get("kind") in DISCREPANCY]
    by_session: dict[str, list[dict]] = defaultdict(list)
    for f in discrepancies:
        by_session[f.get("session_id", "")].append(f)
    patient = labels.get("patient", "")
    scores = Scores()
    scenario_sessions = set()
    for sc in labels.get("scenarios", []):
        scenario_sessions.add(sc["session_id"])
        found = by_session.get(sc["session_id"], [])
        expected = sc.get("fhir_refs", [])
        outcome = ScenarioOutcome(
            patient=patient,
            scenario_id=sc["id"],
            category=sc.get("category", ""),
            kind=sc.get("kind", ""),
            summary=sc.get("summary", ""),
            safety_critical=bool(sc.get("safety_critical")),
            severity_label=sc.get("severity", ""),
        )
        if found:
            outcome.detected = True
            outcome.turn_detected = any(set(f.get("turn_ids", [])) & set(sc.get("turn_ids", [])) for f in found)
            cited = [c for f in found for c in f.get("fhir_refs", [])]
            outcome.resource_informed = any(_ref_matches(c, e) for c in cited for e in expected)
            outcome.flagged_safety = any(f.get("safety_critical") for f in found)
            outcome.severity_found = max((f.get("severity", "low") for f in found), key=lambda s: SEVERITY_RANK.get(s, 0))
            speaker = _top(found, expected)
            outcome.kind_found, outcome.speaker = speaker.get("kind", ""), _provenance(speaker)
            if expected:
                outcome.resource_recall = sum(1 for e in expected if any(_ref_matches(c, e) for c in cited)) / len(expected)
            if cited:
                outcome.resource_precision = sum(1 for c in cited if any(_ref_matches(c, e) for e in expected)) / len(cited)
        scores.scenarios.append(outcome)
    plain = [s for s in session_ids if s not in scenario_sessions]
    scores.plain_sessions = len(plain)
    memories = {m.get("id"): m for m in results.get("memories", [])}
    for sid in plain:
        for f in by_session.get(sid, []):
            memory = memories.get(f.get("memory_id"), {})
            scores.false_discrepancies.append(
                {"patient": patient, "session_id": sid, "turn_ids": f.get("turn_ids", []), "kind": f.get("kind"),
                 "severity": f.get("severity"), "memory": memory.get("content", ""), "explanation": f.get("explanation", ""),
                 **_provenance(f)}
            )
    for trap in labels.get("traps", []):
        scores.traps += 1
        hits = [f for f in discrepancies if set(f.get("turn_ids", [])) & set(trap.get("turn_ids", []))]
        if hits:
            scores.trap_violations.append(
                {"patient": patient, "session_id": trap.get("session_id"), "turn_ids": trap.get("turn_ids"), "why": trap.get("why", ""),
                 "kinds": sorted({f.get("kind", "") for f in hits}), "hits": [{"kind": f.get("kind"), **_provenance(f)} for f in hits]}
            )
    return scores
