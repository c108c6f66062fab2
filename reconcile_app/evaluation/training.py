"""Training the engines' learned parts from labelled datasets (scikit-learn fits; the models ship as JSON).

Deterministic: patients are read in sorted order, vocabularies are sorted, the solver is lbfgs with a fixed
iteration budget and no randomness. Thresholds are chosen on out-of-fold scores (grouped by patient, so a
patient's own sentences never score themselves) at a target rate of plain sessions flagged.
"""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from reconcile_app.core.linear import LinearModel, TextField
from reconcile_app.fhir.clinical import ClinicalRecord, build_clinical_record, resources_from_bundle
from reconcile_app.narrative.engines.delta import turn_dense, turn_texts
from reconcile_app.narrative.types import MemoryDraft, SessionInput, TurnInput

# Label categories (the record side) -> the memory category the fallback memory takes.
MEMORY_CATEGORY = {
    "medication": "medication", "condition": "symptom", "allergy": "allergy", "procedure": "procedure",
    "immunization": "immunization", "observation": "measurement", "careplan": "care_activity",
}


# Label categories -> the memory categories that can carry such a fact (a symptom carries a condition scenario).
LABEL_MEMORY_CATEGORIES = {
    "medication": ("medication",), "condition": ("condition", "symptom", "lifestyle"), "allergy": ("allergy", "medication"),
    "procedure": ("procedure", "care_activity"), "immunization": ("immunization",), "observation": ("measurement", "symptom"),
    "careplan": ("care_activity", "lifestyle", "medication", "symptom"),
}


@dataclass
class Patient:
    key: str
    record: ClinicalRecord
    sessions: list[SessionInput]
    labels: dict[str, Any]

    @property
    def scenario_turns(self) -> dict[str, dict]:
        return {tid: sc for sc in self.labels.get("scenarios", []) for tid in sc.get("turn_ids", [])}

    @property
    def scenario_sessions(self) -> set[str]:
        return {sc["session_id"] for sc in self.labels.get("scenarios", [])}


@dataclass
class TurnSample:
    patient: str
    session: str
    turn: str
    scenario_session: bool
    label: bool
    category: str  # the scenario's label category, for positive turns
    texts: dict[str, str]
    dense: dict[str, float]


@dataclass
class TrainingReport:
    name: str
    samples: int
    positives: int
    patients: int
    cv: dict[str, float] = field(default_factory=dict)


def _dt(text: str) -> datetime:
    return datetime.fromisoformat(text)


def load_patients(folders: Iterable[Path]) -> list[Patient]:
    out = []
    for folder in sorted(folders, key=lambda p: (p.parent.name, p.name)):
        read = lambda name: json.loads((folder / name).read_text(encoding="utf-8"))  # noqa: E731
        transcript = read("transcript.json")
        sessions = [
            SessionInput(s["id"], _dt(s["started_at"]),
                         tuple(TurnInput(t["id"], t["speaker"], _dt(t["at"]), t["text"]) for t in s["turns"]))
            for s in transcript.get("sessions", [])
        ]
        out.append(Patient(f"{folder.parent.name}/{folder.name}", build_clinical_record(resources_from_bundle(read("bundle.json"))),
                           sessions, read("labels.json")))
    return out


def dataset_folders(roots: Iterable[Path]) -> list[Path]:
    return [p for root in roots for p in sorted(root.iterdir()) if (p / "labels.json").is_file() and (p / "transcript.json").is_file()]


def data_fingerprint(folders: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for folder in sorted(folders):
        for name in ("bundle.json", "transcript.json", "labels.json"):
            digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def collect_turn_samples(patients: Sequence[Patient], analyse: Callable[..., tuple[list[MemoryDraft], dict]]) -> list[TurnSample]:
    """Run the rules over every session (in order, with the patient's earlier memories) and describe each patient turn."""
    samples: list[TurnSample] = []
    for patient in patients:
        positives = patient.scenario_turns
        scenario_sessions = patient.scenario_sessions
        prior: list[MemoryDraft] = []
        for session in patient.sessions:
            drafts, hits_of = analyse(session, prior=tuple(prior), record=patient.record)
            prior.extend(drafts)
            by_turn: dict[str, list[MemoryDraft]] = defaultdict(list)
            for d in drafts:
                by_turn[d.anchor_turn_id].append(d)
            coach = ""
            for turn in session.turns:
                if turn.speaker != "patient":
                    coach = turn.text
                    continue
                hits, coach_hits = hits_of.get(turn.id, ([], []))
                sc = positives.get(turn.id)
                samples.append(TurnSample(
                    patient.key, session.id, turn.id, session.id in scenario_sessions, sc is not None,
                    sc["category"] if sc else "", turn_texts(turn.text, coach),
                    turn_dense(turn.text, coach, hits, coach_hits, by_turn.get(turn.id, [])),
                ))
    return samples


# ---- fitting -------------------------------------------------------------------------------------


def _fit_fields(samples: Sequence[TurnSample]) -> list[TextField]:
    return [
        TextField.fit("t", (s.texts["t"] for s in samples), ngram_max=2, min_df=2),
        TextField.fit("c", (s.texts["c"] for s in samples), ngram_max=1, min_df=2, weight=0.5),
    ]


def _featurize(fields: list[TextField], s: TurnSample) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in fields:
        out.update(f.features(s.texts.get(f.prefix, "")))
    out.update({f"f:{k}": v for k, v in s.dense.items() if v})
    return out


def _sklearn_fit(rows: list[dict[str, float]], labels: list[str], *, C: float, balanced: bool) -> tuple[list[str], dict[str, dict[str, float]], dict[str, float]]:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = DictVectorizer(sort=True)
    X = vec.fit_transform(rows)
    model = LogisticRegression(C=C, class_weight="balanced" if balanced else None, max_iter=5000, solver="lbfgs")
    model.fit(X, labels)
    names = vec.get_feature_names_out()
    classes = [str(c) for c in model.classes_]
    if len(classes) == 2:
        weights = {classes[1]: {n: float(w) for n, w in zip(names, model.coef_[0]) if w}}
        intercepts = {classes[1]: float(model.intercept_[0])}
    else:
        weights = {c: {n: float(w) for n, w in zip(names, model.coef_[i]) if w} for i, c in enumerate(classes)}
        intercepts = {c: float(model.intercept_[i]) for i, c in enumerate(classes)}
    return classes, weights, intercepts


def fit_detector(samples: Sequence[TurnSample], *, C: float = 2.0, name: str = "turn-delta", version: str = "1") -> LinearModel:
    fields = _fit_fields(samples)
    rows = [_featurize(fields, s) for s in samples]
    labels = ["yes" if s.label else "no" for s in samples]
    classes, weights, intercepts = _sklearn_fit(rows, labels, C=C, balanced=True)
    return LinearModel(name, version, classes, weights, intercepts, fields)


def fit_category(samples: Sequence[TurnSample], *, C: float = 2.0, name: str = "turn-category", version: str = "1") -> LinearModel:
    positives = [s for s in samples if s.label]
    fields = _fit_fields(positives)
    rows = [_featurize(fields, s) for s in positives]
    labels = [MEMORY_CATEGORY.get(s.category, "symptom") for s in positives]
    classes, weights, intercepts = _sklearn_fit(rows, labels, C=C, balanced=False)
    return LinearModel(name, version, classes, weights, intercepts, fields)


def out_of_fold(samples: Sequence[TurnSample], fit: Callable[[Sequence[TurnSample]], LinearModel], folds: int = 5) -> list[float]:
    """Each sample scored by a model that never saw its patient (patients dealt round-robin in sorted order)."""
    patients = sorted({s.patient for s in samples})
    fold_of = {p: i % folds for i, p in enumerate(patients)}
    scores = [0.0] * len(samples)
    for k in range(folds):
        train = [s for s in samples if fold_of[s.patient] != k]
        model = fit(train)
        for i, s in enumerate(samples):
            if fold_of[s.patient] == k:
                scores[i] = model.positive(model.featurize(s.texts, s.dense))
    return scores


def session_rates(samples: Sequence[TurnSample], scores: Sequence[float], threshold: float) -> dict[str, float]:
    """Scenario sessions with a turn at or over the threshold, and plain sessions with one (the false-alarm rate)."""
    best: dict[tuple[str, str], float] = defaultdict(float)
    scenario: dict[tuple[str, str], bool] = {}
    for s, score in zip(samples, scores):
        key = (s.patient, s.session)
        best[key] = max(best[key], score)
        scenario[key] = s.scenario_session
    scen = [v for k, v in best.items() if scenario[k]]
    plain = [v for k, v in best.items() if not scenario[k]]
    return {
        "session_recall": sum(v >= threshold for v in scen) / len(scen) if scen else 0.0,
        "plain_flagged": sum(v >= threshold for v in plain) / len(plain) if plain else 0.0,
    }


def threshold_for(samples: Sequence[TurnSample], scores: Sequence[float], plain_rate: float) -> float:
    """The lowest threshold that flags at most `plain_rate` of plain sessions."""
    best: dict[tuple[str, str], float] = defaultdict(float)
    plain_keys = set()
    for s, score in zip(samples, scores):
        key = (s.patient, s.session)
        best[key] = max(best[key], score)
        if not s.scenario_session:
            plain_keys.add(key)
    plain = sorted((best[k] for k in plain_keys), reverse=True)
    allowed = int(plain_rate * len(plain))
    return round(plain[allowed] + 1e-6, 6) if allowed < len(plain) else 0.5


# ---- the judge: verdict-level samples, with the turn scores a model that never saw the patient gives ------------


@dataclass
class FindingSample:
    patient: str
    session: str
    scenario_session: bool
    label: bool | None  # None: a memory of a scenario session off the scenario's turns (kept for the session rates only)
    rule_discrepancy: bool
    promotable: bool
    texts: dict[str, str]
    dense: dict[str, float]


def fold_of(patients: Sequence[Patient], folds: int) -> dict[str, int]:
    return {p.key: i % folds for i, p in enumerate(sorted(patients, key=lambda p: p.key))}


def collect_finding_samples(patients: Sequence[Patient], extractor: Any, reconciler: Any, detector_of: Callable[[str], Any]) -> list[FindingSample]:
    """Run the whole rules pipeline (extraction, the turn detector, reconciliation without the judge) and describe every verdict."""
    from reconcile_app.reconciliation.engines.judge import Judge, finding_dense, judge_texts
    from reconcile_app.reconciliation.gate import citation_gate

    samples: list[FindingSample] = []
    for patient in patients:
        detector = detector_of(patient.key)
        positives = patient.scenario_turns
        scenario_sessions = patient.scenario_sessions
        prior: list[MemoryDraft] = []
        for session in patient.sessions:
            drafts, hits_of = extractor.analyse_session(session, prior=tuple(prior), record=patient.record)
            drafts = detector.annotate(session, drafts, hits_of)
            findings = [citation_gate(f, patient.record) for f in reconciler.reconcile_rules(drafts, patient.record, history=tuple(prior))]
            prior.extend(drafts)
            in_scenario = session.id in scenario_sessions
            for memory, finding in zip(drafts, findings):
                scenario = next((positives[t] for t in memory.turn_ids if t in positives), None)
                # the memory that carries the scenario's fact: on its turn and of a category that can hold it
                relevant = scenario is not None and memory.category in LABEL_MEMORY_CATEGORIES.get(scenario["category"], ())
                label = True if relevant else (None if in_scenario else False)
                samples.append(FindingSample(
                    patient.key, session.id, in_scenario, label, finding.kind in ("contradiction", "gap"),
                    Judge._promotable(memory, finding), judge_texts(memory), finding_dense(memory, finding, patient.record),
                ))
    return samples


def fit_judge(samples: Sequence[FindingSample], *, C: float = 1.0, name: str = "judge", version: str = "1") -> LinearModel:
    train = [s for s in samples if s.label is not None]
    fields = [TextField.fit("q", (s.texts["q"] for s in train), ngram_max=2, min_df=2, weight=0.7)]
    rows = []
    for s in train:
        row: dict[str, float] = {}
        for f in fields:
            row.update(f.features(s.texts.get(f.prefix, "")))
        row.update({f"f:{k}": v for k, v in s.dense.items() if v})
        rows.append(row)
    classes, weights, intercepts = _sklearn_fit(rows, ["yes" if s.label else "no" for s in train], C=C, balanced=True)
    return LinearModel(name, version, classes, weights, intercepts, fields)


def judge_out_of_fold(samples: Sequence[FindingSample], folds: int, fold_map: dict[str, int], C: float) -> list[float]:
    scores = [0.0] * len(samples)
    for k in range(folds):
        model = fit_judge([s for s in samples if fold_map[s.patient] != k], C=C)
        for i, s in enumerate(samples):
            if fold_map[s.patient] == k:
                scores[i] = model.positive(model.featurize(s.texts, s.dense))
    return scores


def simulate(samples: Sequence[FindingSample], scores: Sequence[float], veto: float, promote: float) -> dict[str, float]:
    """Session detection and false discrepancies per plain session if the judge decided with these thresholds."""
    flagged: dict[tuple[str, str], int] = defaultdict(int)
    scenario: dict[tuple[str, str], bool] = {}
    for s, p in zip(samples, scores):
        key = (s.patient, s.session)
        scenario[key] = s.scenario_session
        discrepancy = (s.rule_discrepancy and p >= veto) or (not s.rule_discrepancy and s.promotable and p >= promote)
        flagged[key] += int(discrepancy)
    scen = [k for k, v in scenario.items() if v]
    plain = [k for k, v in scenario.items() if not v]
    return {
        "detection": sum(flagged[k] > 0 for k in scen) / len(scen) if scen else 0.0,
        "false_per_plain": sum(flagged[k] for k in plain) / len(plain) if plain else 0.0,
    }


def choose_thresholds(samples: Sequence[FindingSample], scores: Sequence[float], max_false: float) -> tuple[float, float, dict[str, float]]:
    """The (veto, promote) pair with the best detection at no more than `max_false` false discrepancies per plain session."""
    grid = [round(x * 0.05, 2) for x in range(1, 20)]
    best = (0.5, 1.01, {"detection": -1.0, "false_per_plain": 0.0})
    for veto in grid:
        for promote in [*grid, 1.01]:
            if promote < veto:
                continue
            rates = simulate(samples, scores, veto, promote)
            if rates["false_per_plain"] <= max_false and (rates["detection"], veto) > (best[2]["detection"], best[0]):
                best = (veto, promote, rates)
    return best


@dataclass
class TrainedModels:
    detector: LinearModel
    category: LinearModel
    judge: LinearModel
    report: dict[str, Any]


def train_models(patients: Sequence[Patient], extractor: Any, reconciler: Any, *, folds: int = 5, max_false: float = 0.04,
                 detector_rate: float = 0.15, C_detector: float = 4.0, C_judge: float = 1.0,
                 progress: Callable[[str], None] = lambda _m: None) -> TrainedModels:
    """Detector and category model on every turn; the judge on verdicts whose turn scores are out of fold; thresholds out of fold."""
    from reconcile_app.narrative.engines.delta import DeltaDetector

    fold_map = fold_of(patients, folds)
    progress("turn samples")
    turns = collect_turn_samples(patients, extractor.analyse_session)
    category = fit_category(turns)
    detectors: dict[int, DeltaDetector] = {}
    for k in range(folds):
        progress(f"detector fold {k + 1}/{folds}")
        model = fit_detector([s for s in turns if fold_map[s.patient] != k], C=C_detector)
        oof = [(s, model.positive(model.featurize(s.texts, s.dense))) for s in turns if fold_map[s.patient] == k]
        model.threshold = threshold_for([s for s, _ in oof], [p for _, p in oof], detector_rate) if oof else 0.9
        detectors[k] = DeltaDetector.from_models(model, category)
    progress("verdict samples")
    findings = collect_finding_samples(patients, extractor, reconciler, lambda key: detectors[fold_map[key]])
    progress("judge out of fold")
    oof_judge = judge_out_of_fold(findings, folds, fold_map, C_judge)
    veto, promote, rates = choose_thresholds(findings, oof_judge, max_false)
    rules_only = simulate(findings, [1.0 if s.rule_discrepancy else 0.0 for s in findings], 0.5, 1.01)
    progress("final fits")
    detector = fit_detector(turns, C=C_detector)
    detector_oof = [0.0] * len(turns)
    for k, det in detectors.items():
        for i, s in enumerate(turns):
            if fold_map[s.patient] == k and det.detector is not None:
                detector_oof[i] = det.detector.positive(det.detector.featurize(s.texts, s.dense))
    detector.threshold = threshold_for(turns, detector_oof, detector_rate)
    judge = fit_judge(findings, C=C_judge)
    judge.threshold = veto
    judge.meta.update({"veto": veto, "promote": promote})
    report = {
        "patients": len(patients), "turns": len(turns), "turn_positives": sum(s.label for s in turns),
        "verdicts": len(findings), "folds": folds, "max_false_per_plain": max_false,
        "out_of_fold": {"rules_only": rules_only, "with_judge": rates,
                        "detector_sessions": session_rates(turns, detector_oof, detector.threshold)},
    }
    return TrainedModels(detector, category, judge, report)
