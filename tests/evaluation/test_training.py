"""Training the learned parts: deterministic fits, out-of-fold thresholds, and model files the engines load."""
from __future__ import annotations

from pathlib import Path

import pytest

from reconcile_app.core.linear import LinearModel
from reconcile_app.evaluation.training import (
    choose_thresholds,
    collect_turn_samples,
    dataset_folders,
    fit_detector,
    load_patients,
    simulate,
    threshold_for,
    train_models,
)
from reconcile_app.narrative.engines.rules import RulesExtractor
from reconcile_app.reconciliation.engines.rules import RulesReconciler

DEMO = Path(__file__).resolve().parents[2] / "reconcile_app" / "sandbox" / "demo_data"


@pytest.fixture(scope="module")
def patients() -> list:
    return load_patients(dataset_folders([DEMO]))


@pytest.fixture(scope="module")
def trained(patients: list):
    return train_models(patients, RulesExtractor(), RulesReconciler(), folds=3)


def test_turn_samples_mark_exactly_the_scenario_turns(patients: list) -> None:
    samples = collect_turn_samples(patients, RulesExtractor().analyse_session)
    labelled = {t for p in patients for t in p.scenario_turns}
    assert {s.turn for s in samples if s.label} == labelled
    assert all(s.scenario_session for s in samples if s.label)


def test_training_is_deterministic(patients: list) -> None:
    samples = collect_turn_samples(patients, RulesExtractor().analyse_session)
    assert fit_detector(samples).to_json() == fit_detector(samples).to_json()


def test_train_models_reports_out_of_fold_rates_and_sets_thresholds(trained) -> None:
    report = trained.report
    assert report["patients"] == 3 and report["turn_positives"] > 0
    assert 0.0 <= trained.judge.meta["veto"] <= trained.judge.meta["promote"] <= 1.01
    assert 0.0 < trained.detector.threshold < 1.0
    for key in ("rules_only", "with_judge"):
        assert set(report["out_of_fold"][key]) == {"detection", "false_per_plain"}


def test_trained_models_survive_the_json_round_trip(trained) -> None:
    for model in (trained.detector, trained.category, trained.judge):
        again = LinearModel.from_json(model.to_json())
        assert again.fingerprint() == model.fingerprint()


def test_thresholds_never_exceed_the_false_alarm_budget(trained, patients: list) -> None:
    # a synthetic score list: every rules discrepancy scores high, so any veto under it keeps them all
    from reconcile_app.evaluation.training import FindingSample

    samples = [FindingSample("p", f"s{i}", i % 2 == 0, None, True, True, {"q": ""}, {}) for i in range(10)]
    scores = [0.9 if i % 2 == 0 else 0.2 for i in range(10)]
    veto, promote, rates = choose_thresholds(samples, scores, max_false=0.0)
    assert rates["false_per_plain"] == 0.0 and rates["detection"] == 1.0 and veto > 0.2
    assert simulate(samples, scores, 0.1, 1.01)["false_per_plain"] == 1.0


def test_threshold_for_flags_at_most_the_asked_share_of_plain_sessions() -> None:
    from reconcile_app.evaluation.training import TurnSample

    samples = [TurnSample("p", f"s{i}", f"t{i}", False, False, "", {"t": "", "c": ""}, {}) for i in range(20)]
    scores = [i / 20 for i in range(20)]
    threshold = threshold_for(samples, scores, 0.1)
    assert sum(s >= threshold for s in scores) <= 2
