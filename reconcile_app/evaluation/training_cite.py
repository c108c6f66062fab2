"""Training the citation ranker (reconciliation/engines/citing.py) on labelled scenarios, out of fold by author."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconcile_app.core.linear import LinearModel
from reconcile_app.evaluation.scoring import _ref_matches
from reconcile_app.narrative.types import MemoryDraft, Subject
from reconcile_app.reconciliation.engines.citing import HAND_THRESHOLD, MAX_ADDED, CitationRanker, candidate_features
from reconcile_app.reconciliation.types import Citation

GRID_C = (0.1, 0.3, 1.0)
# Added citations must be right at least half the time: about the precision of the rules' own citations (0.57 on the
# tune split), so what a nurse opens beside a finding is not mostly noise.
PRECISION_FLOOR = 0.5


@dataclass
class CiteCase:
    patient: str
    scenario: str
    cited_hits: bool  # the finding's own citations already inform the scenario
    cited: int
    candidates: list[tuple[dict[str, float], bool]] = field(default_factory=list)  # features, expected
    keys: list[str] = field(default_factory=list)  # each candidate's code (two entries of one code are one citation)


def collect_cite_cases(patients: Sequence[Any], extractor: Any, reconciler: Any) -> list[CiteCase]:
    """Run extraction and the rules (through the citation gate) over every session; one case per own memory on a scenario turn."""
    from reconcile_app.reconciliation.gate import citation_gate

    cases: list[CiteCase] = []
    for patient in patients:
        scenarios = {tid: sc for sc in patient.labels.get("scenarios", []) for tid in sc.get("turn_ids", [])}
        prior: list[MemoryDraft] = []
        for session in patient.sessions:
            drafts = extractor.extract_session(session, prior=[d for d in prior if d.is_patient_affirmed], record=patient.record)
            findings = [citation_gate(f, patient.record) for f in reconciler.reconcile_rules(drafts, patient.record, history=tuple(prior))]
            prior.extend(drafts)
            session_text = " ".join(dict.fromkeys(m.quote for m in drafts if m.quote and m.subject == Subject.PATIENT))
            for m, f in zip(drafts, findings):
                sc = scenarios.get(m.anchor_turn_id)
                if sc is None or m.subject != Subject.PATIENT:
                    continue
                cases.append(cite_case(patient.key, sc, m, f.citations, patient.record, session_text))
    return cases


def cite_case(key: str, scenario: dict, memory: MemoryDraft, cited: Sequence[Citation], record: Any, session_text: str) -> CiteCase:
    expected = scenario.get("fhir_refs", [])
    have = [c.as_dict() for c in cited]
    case = CiteCase(key, scenario["id"], any(_ref_matches(c, e) for c in have for e in expected), len(have))
    for entry, features in candidate_features(memory.quote, memory.category, record, session_text=session_text, cited=cited):
        ref = Citation.of(entry).as_dict()
        if any(_ref_matches(ref, c) or _ref_matches(c, ref) for c in have):
            continue
        case.candidates.append((features, any(_ref_matches(ref, e) for e in expected)))
        case.keys.append(f"{ref['resourceType']}|{ref['system']}|{ref['code']}" if ref["code"] else f"{ref['resourceType']}/{ref['id']}")
    return case


def fit_cite(cases: Sequence[CiteCase], *, C: float) -> LinearModel:
    from reconcile_app.evaluation.training import _sklearn_fit

    rows = [{f"f:{k}": v for k, v in feats.items()} for c in cases for feats, _ in c.candidates]
    labels = ["yes" if y else "no" for c in cases for _, y in c.candidates]
    classes, weights, intercepts = _sklearn_fit(rows, labels, C=C, balanced=False)
    return LinearModel("cite", "1", classes, weights, intercepts, [])


def simulate(cases: Sequence[CiteCase], scores: Sequence[Sequence[float]], threshold: float, limit: int = MAX_ADDED) -> dict[str, float]:
    """Scenarios informed (any case's own or added citation expected) and the precision of the added citations."""
    informed: dict[str, bool] = defaultdict(bool)
    added = right = 0
    for case, s in zip(cases, scores):
        top: list[tuple[float, bool]] = []
        seen: set[str] = set()
        for v, (_, y), key in sorted(zip(s, case.candidates, case.keys), key=lambda t: -t[0]):
            if v < threshold or len(top) >= limit:
                break
            if key not in seen:
                seen.add(key)
                top.append((v, y))
        added += len(top)
        right += sum(y for _, y in top)
        informed[case.scenario] |= case.cited_hits or any(y for _, y in top)
    return {"informed": round(sum(informed.values()) / len(informed), 4) if informed else 0.0,
            "added_per_case": round(added / len(cases), 3) if cases else 0.0, "added_precision": round(right / added, 3) if added else 0.0}


def _oof(cases: Sequence[CiteCase], fold_map: dict[str, int], folds: int, C: float) -> list[list[float]]:
    scores: list[list[float]] = [[] for _ in cases]
    for k in range(folds):
        model = fit_cite([c for c in cases if fold_map[c.patient] != k], C=C)
        for i, c in enumerate(cases):
            if fold_map[c.patient] == k:
                scores[i] = [model.positive(model.featurize({}, f)) for f, _ in c.candidates]
    return scores


def train_cite(patients: Sequence[Any], extractor: Any, reconciler: Any, fold_map: dict[str, int], folds: int,
               progress: Callable[[str], None] = lambda _m: None) -> tuple[LinearModel | None, dict[str, Any]]:
    """The learned ranker where it informs more scenarios out of fold (by author) than the hand weights, at a threshold
    whose added citations are at least as precise; else None (the hand weights stay)."""
    progress("citation cases")
    return select_cite(collect_cite_cases(patients, extractor, reconciler), fold_map, folds)


def select_cite(cases: Sequence[CiteCase], fold_map: dict[str, int], folds: int) -> tuple[LinearModel | None, dict[str, Any]]:
    """Every C and threshold out of fold by author; the setting informing the most scenarios whose added citations are
    right at least PRECISION_FLOOR of the time (and no less often than the hand weights').

    One case per memory of the patient's own on a scenario's turns: the entries its finding already cites (the rules',
    after the citation gate) and the candidates the ranker proposes, each labelled by whether the scenario's reviewers
    listed it (by id, or by type, system and code as the scores match). The learned ranker ships only where it informs more
    scenarios than the hand weights out of fold (whole authors held out), at no lower precision of the added citations.
    """
    hand = CitationRanker(None)
    hand_scores = [[hand.score(f)[0] for f, _ in c.candidates] for c in cases]
    report: dict[str, Any] = {"cases": len(cases), "candidates": sum(len(c.candidates) for c in cases),
                              "none": simulate(cases, [[] for _ in cases], 1.0), "hand": simulate(cases, hand_scores, HAND_THRESHOLD)}
    floor = max(report["hand"]["added_precision"], PRECISION_FLOOR)
    best: tuple[float, float, dict[str, float]] | None = None
    grid = []
    for C in GRID_C:
        oof = _oof(cases, fold_map, folds, C)
        for step in range(90, 4, -5):
            rates = simulate(cases, oof, step / 100)
            grid.append({"C": C, "threshold": step / 100, **rates})
            if rates["added_precision"] >= floor and (best is None or rates["informed"] > best[2]["informed"]):
                best = (C, step / 100, rates)
    report["grid"] = grid
    if best is None or best[2]["informed"] <= report["hand"]["informed"]:
        report["shipped"] = False
        return None, report
    model = fit_cite(cases, C=best[0])
    model.threshold = best[1]
    report.update({"shipped": True, "C": best[0], "threshold": best[1], "learned": best[2]})
    return model, report


def cite_outcome(outcomes: dict[str, LinearModel], report: dict[str, Any], patients: Sequence[Any], extractor: Any, reconciler: Any,
                 fold_map: dict[str, int], folds: int, progress: Callable[[str], None] = lambda _m: None) -> None:
    """train_models' step: the ranker's report under "cite", and the model among the outcomes where it ships."""
    model, report["cite"] = train_cite(patients, extractor, reconciler, fold_map, folds, progress)
    if model is not None:
        outcomes["cite"] = model
