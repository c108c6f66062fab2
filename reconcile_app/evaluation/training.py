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


# ---- the judge: one case per patient turn, with the turn scores of a detector that never saw the patient ----------


@dataclass
class TurnCase:
    patient: str
    session: str
    turn: str
    scenario_session: bool
    label: bool  # the turn carries its session's scenario
    scenario: dict[str, Any] | None  # kind, severity, safety_critical, category of that scenario
    dense: dict[str, float]
    emits: bool  # the turn has something to raise (a rules discrepancy or a clinical memory of the patient's own)
    rule_flag: bool  # the rules alone raise a discrepancy on it
    picked: dict[str, Any] | None = None  # kind, severity, safety_critical of the verdict the turn would raise


@dataclass
class Corpus:
    cases: list[TurnCase]
    scenario_sessions: int
    plain_sessions: int


def fold_of(patients: Sequence[Patient], folds: int) -> dict[str, int]:
    return {p.key: i % folds for i, p in enumerate(sorted(patients, key=lambda p: p.key))}


def collect_turn_cases(patients: Sequence[Patient], extractor: Any, reconciler: Any, detector_of: Callable[[str], Any]) -> Corpus:
    """Run the whole rules pipeline (extraction, the turn detector, reconciliation without the judge), one case per turn."""
    from reconcile_app.reconciliation.engines.judge import pick, turn_dense
    from reconcile_app.reconciliation.gate import citation_gate

    cases: list[TurnCase] = []
    scenario_total = plain_total = 0
    for patient in patients:
        detector = detector_of(patient.key)
        positives = patient.scenario_turns
        scenario_sessions = patient.scenario_sessions
        prior: list[MemoryDraft] = []
        for session in patient.sessions:
            in_scenario = session.id in scenario_sessions
            scenario_total += int(in_scenario)
            plain_total += int(not in_scenario)
            drafts, hits_of = extractor.analyse_session(session, prior=tuple(prior), record=patient.record)
            drafts = detector.annotate(session, drafts, hits_of)
            findings = [citation_gate(f, patient.record) for f in reconciler.reconcile_rules(drafts, patient.record, history=tuple(prior))]
            prior.extend(drafts)
            turns: dict[str, list[int]] = defaultdict(list)
            for i, m in enumerate(drafts):
                turns[m.anchor_turn_id].append(i)
            for turn_id, indexes in turns.items():
                mems, outs = [drafts[i] for i in indexes], [findings[i] for i in indexes]
                sc = positives.get(turn_id)
                chosen = pick(mems, outs)
                cases.append(TurnCase(
                    patient.key, session.id, turn_id, in_scenario, sc is not None,
                    {k: sc.get(k) for k in ("kind", "severity", "safety_critical", "category")} if sc else None,
                    turn_dense(mems, outs, patient.record), chosen is not None,
                    any(f.kind in ("contradiction", "gap") for f in outs),
                    {"kind": outs[chosen].kind, "severity": outs[chosen].severity, "safety_critical": outs[chosen].safety_critical,
                     "category": outs[chosen].category} if chosen is not None else None,
                ))
    return Corpus(cases, scenario_total, plain_total)


def fit_judge(cases: Sequence[TurnCase], *, C: float = 1.0, name: str = "judge", version: str = "2") -> LinearModel:
    rows = [{f"f:{k}": v for k, v in c.dense.items() if v} for c in cases]
    classes, weights, intercepts = _sklearn_fit(rows, ["yes" if c.label else "no" for c in cases], C=C, balanced=True)
    return LinearModel(name, version, classes, weights, intercepts, [])


def judge_out_of_fold(cases: Sequence[TurnCase], folds: int, fold_map: dict[str, int], C: float) -> list[float]:
    scores = [0.0] * len(cases)
    for k in range(folds):
        model = fit_judge([c for c in cases if fold_map[c.patient] != k], C=C)
        for i, c in enumerate(cases):
            if fold_map[c.patient] == k:
                scores[i] = model.positive(model.featurize({}, c.dense))
    return scores


def simulate(corpus: Corpus, flagged: Sequence[bool]) -> dict[str, float]:
    """Session detection and false discrepancies per plain session when these turns raise one finding each."""
    hit_sessions = {(c.patient, c.session) for c, f in zip(corpus.cases, flagged) if f and c.scenario_session}
    false = sum(1 for c, f in zip(corpus.cases, flagged) if f and not c.scenario_session)
    return {
        "detection": len(hit_sessions) / corpus.scenario_sessions if corpus.scenario_sessions else 0.0,
        "false_per_plain": false / corpus.plain_sessions if corpus.plain_sessions else 0.0,
    }


def judged(corpus: Corpus, scores: Sequence[float], threshold: float) -> list[bool]:
    return [c.emits and s >= threshold for c, s in zip(corpus.cases, scores)]


JUDGE_OFF = 1.01  # a judge threshold no score reaches: the turn filter is off (Judge.filters)


def choose_threshold(corpus: Corpus, scores: Sequence[float], max_false: float) -> tuple[float, dict[str, float]]:
    """The lowest threshold whose false discrepancies per plain session stay within the budget (best detection)."""
    best = (1.0, simulate(corpus, [False] * len(corpus.cases)))
    for step in range(99, 0, -1):
        threshold = step / 100
        rates = simulate(corpus, judged(corpus, scores, threshold))
        if rates["false_per_plain"] > max_false:
            break
        best = (threshold, rates)
    return best


# ---- what a raised turn is: kind, safety flag, severity, learned from the scenarios it carries ------------------

_RULE_DEFAULT = {"kind": "gap", "severity": "medium", "safety_critical": False}
_RANK = {"low": 1, "medium": 2, "high": 3}


def _target(case: TurnCase, name: str) -> str:
    return str(case.scenario[name]) if case.scenario else ""


def _rule_value(case: TurnCase, name: str) -> str:
    picked = case.picked or {}
    if picked.get("kind") in ("contradiction", "gap"):
        return str(picked[name])
    return str(_RULE_DEFAULT[name])


def fit_outcome(cases: Sequence[TurnCase], name: str, *, C: float = 0.3) -> LinearModel:
    rows = [{f"f:{k}": v for k, v in c.dense.items() if v} for c in cases]
    classes, weights, intercepts = _sklearn_fit(rows, [_target(c, name) for c in cases], C=C, balanced=name == "safety_critical")
    return LinearModel(f"judge-{name}", "1", classes, weights, intercepts, [])


def outcome_out_of_fold(cases: Sequence[TurnCase], name: str, folds: int, fold_map: dict[str, int]) -> list[dict[str, float]]:
    probs: list[dict[str, float]] = [{} for _ in cases]
    for k in range(folds):
        train = [c for c in cases if fold_map[c.patient] != k]
        if len({_target(c, name) for c in train}) < 2:
            continue
        model = fit_outcome(train, name)
        for i, c in enumerate(cases):
            if fold_map[c.patient] == k:
                probs[i] = model.proba(model.featurize({}, c.dense))
    return probs


def outcome_models(corpus: Corpus, folds: int, fold_map: dict[str, int], safety_recall: float = 0.9) -> tuple[dict[str, LinearModel], dict[str, Any]]:
    """Each outcome model out of fold against the rules' own value on the raised scenario turns; kept only where better."""
    cases = [c for c in corpus.cases if c.label and c.emits]
    report: dict[str, Any] = {"scenario_turns": len(cases)}
    shipped: dict[str, LinearModel] = {}
    if len(cases) < folds * 4:
        return shipped, report
    for name, key in (("kind", "kind"), ("severity", "severity")):
        probs = outcome_out_of_fold(cases, key, folds, fold_map)
        learned = [max(p, key=p.get) if p else _rule_value(c, key) for c, p in zip(cases, probs)]
        rules = [_rule_value(c, key) for c in cases]
        truth = [_target(c, key) for c in cases]
        acc = lambda pred: sum(a == b for a, b in zip(pred, truth)) / len(truth)  # noqa: E731
        row: dict[str, Any] = {"learned": round(acc(learned), 3), "rules": round(acc(rules), 3)}
        if name == "severity":
            within = lambda pred: sum(abs(_RANK[a] - _RANK[b]) <= 1 for a, b in zip(pred, truth)) / len(truth)  # noqa: E731
            row.update({"learned_within_one": round(within(learned), 3), "rules_within_one": round(within(rules), 3)})
        row["shipped"] = row["learned"] > row["rules"]
        report[name] = row
        if row["shipped"]:
            shipped[name] = fit_outcome(cases, key)
    probs = outcome_out_of_fold(cases, "safety_critical", folds, fold_map)
    truth_safe = [_target(c, "safety_critical") == "True" for c in cases]
    rules_safe = [_rule_value(c, "safety_critical") == "True" for c in cases]
    p_true = [p.get("True", 0.0) for p in probs]

    def rates(threshold: float) -> tuple[float, int]:
        flags = [r or p >= threshold for r, p in zip(rules_safe, p_true)]
        recall = sum(f for f, t in zip(flags, truth_safe) if t) / max(1, sum(truth_safe))
        return recall, sum(f and not t for f, t in zip(flags, truth_safe))

    rules_recall, rules_false = rates(1.01)
    threshold = next((t / 100 for t in range(95, 4, -1) if rates(t / 100)[0] >= safety_recall), 0.05)
    recall, false = rates(threshold)
    report["safety"] = {"rules_recall": round(rules_recall, 3), "rules_false_flags": rules_false, "threshold": threshold,
                        "learned_or_rules_recall": round(recall, 3), "learned_or_rules_false_flags": false,
                        "shipped": recall >= rules_recall + 0.05}
    if report["safety"]["shipped"]:
        model = fit_outcome(cases, "safety_critical")
        model.threshold = threshold
        shipped["safety"] = model
    return shipped, report


@dataclass
class TrainedModels:
    detector: LinearModel
    category: LinearModel
    judge: LinearModel
    report: dict[str, Any]
    outcomes: dict[str, LinearModel] = field(default_factory=dict)


def train_models(patients: Sequence[Patient], extractor: Any, reconciler: Any, *, folds: int = 5, max_false: float = 0.04,
                 fallback_rate: float = 0.05, C_detector: float = 8.0, C_judge: float = 1.0,
                 progress: Callable[[str], None] = lambda _m: None) -> TrainedModels:
    """Detector and category model on every turn; the judge on turn cases whose detector scores are out of fold."""
    from reconcile_app.narrative.engines.delta import DeltaDetector

    fold_map = fold_of(patients, folds)
    progress("turn samples")
    turns = collect_turn_samples(patients, extractor.analyse_session)
    category = fit_category(turns)
    detectors: dict[int, DeltaDetector] = {}
    detector_oof = [0.0] * len(turns)
    for k in range(folds):
        progress(f"detector fold {k + 1}/{folds}")
        model = fit_detector([s for s in turns if fold_map[s.patient] != k], C=C_detector)
        for i, s in enumerate(turns):
            if fold_map[s.patient] == k:
                detector_oof[i] = model.positive(model.featurize(s.texts, s.dense))
        detectors[k] = DeltaDetector.from_models(model, category)
    # fallback memories only where the detector is as sure as `fallback_rate` of plain sessions allows
    fallback_threshold = threshold_for(turns, detector_oof, fallback_rate)
    for det in detectors.values():
        assert det.detector is not None
        det.detector.threshold = fallback_threshold
    progress("turn cases")
    corpus = collect_turn_cases(patients, extractor, reconciler, lambda key: detectors[fold_map[key]])
    progress("judge out of fold")
    oof = judge_out_of_fold(corpus.cases, folds, fold_map, C_judge)
    threshold, rates = choose_threshold(corpus, oof, max_false)
    rules_only = simulate(corpus, [c.rule_flag for c in corpus.cases])
    # The judge filters turns only where it beats the rules out of fold: the rules already within the false-discrepancy
    # budget and detecting at least as much means the filter would only cost detection (threshold above 1: off).
    filters = rules_only["false_per_plain"] > max_false or rates["detection"] > rules_only["detection"]
    if not filters:
        threshold = JUDGE_OFF
    progress("final fits")
    detector = fit_detector(turns, C=C_detector)
    detector.threshold = fallback_threshold
    judge = fit_judge(corpus.cases, C=C_judge)
    judge.threshold = threshold
    progress("outcome models")
    outcomes, outcome_report = outcome_models(corpus, folds, fold_map)
    report = {
        "patients": len(patients), "turns": len(turns), "turn_positives": sum(s.label for s in turns),
        "turn_cases": len(corpus.cases), "scenario_sessions": corpus.scenario_sessions, "plain_sessions": corpus.plain_sessions,
        "folds": folds, "max_false_per_plain": max_false, "fallback_threshold": fallback_threshold, "judge_threshold": threshold,
        "judge_filters_turns": filters,
        "out_of_fold": {"rules_only_one_per_turn": rules_only, "with_judge": rates,
                        "detector_sessions_at_fallback": session_rates(turns, detector_oof, fallback_threshold),
                        "outcomes": outcome_report},
    }
    return TrainedModels(detector, category, judge, report, outcomes)
