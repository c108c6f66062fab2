"""Training the learned parts: deterministic fits, out-of-fold thresholds, and model files the engines load."""
from __future__ import annotations

from pathlib import Path

import pytest

from reconcile_app.core.linear import LinearModel
from reconcile_app.evaluation.training import (
    choose_threshold,
    collect_turn_samples,
    dataset_folders,
    fit_detector,
    judged,
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
    assert report["patients"] == 3 and report["turn_positives"] > 0 and report["plain_sessions"] > 0
    # off (above 1) unless the judge's filter / the fallback memories beat the rules out of fold
    assert 0.0 < trained.judge.threshold <= 1.01 and (trained.judge.threshold <= 1.0) == report["judge_filters_turns"]
    assert 0.0 < trained.detector.threshold <= 1.01
    oof = report["out_of_fold"]
    assert set(oof["rules_only_one_per_turn"]) == {"detection", "false_per_plain"}
    assert {"detection", "false_per_plain", "beats_rules"} <= set(oof["with_judge"])
    if report["judge_filters_turns"]:
        assert oof["with_judge"]["false_per_plain"] <= oof["rules_only_one_per_turn"]["false_per_plain"]
        assert oof["with_judge"]["detection"] >= oof["rules_only_one_per_turn"]["detection"]
    fallbacks = oof["fallbacks"]
    assert fallbacks["with_fallbacks"]["false_per_plain"] <= fallbacks["rules_without_fallbacks"]["false_per_plain"] + 0.01 + 1e-9
    assert "scenario_turns" in oof["outcomes"]


def test_trained_models_survive_the_json_round_trip(trained) -> None:
    for model in (trained.detector, trained.category, trained.judge):
        again = LinearModel.from_json(model.to_json())
        assert again.fingerprint() == model.fingerprint()


def _corpus(flags: list[tuple[bool, bool]]):
    from reconcile_app.evaluation.training import Corpus, TurnCase

    cases = [TurnCase("p", f"s{i}", f"t{i}", scenario, scenario, None, {}, emits, False) for i, (scenario, emits) in enumerate(flags)]
    return Corpus(cases, scenario_sessions=sum(s for s, _ in flags), plain_sessions=sum(not s for s, _ in flags))


def test_simulate_counts_one_finding_per_flagged_turn_and_only_turns_that_can_emit() -> None:
    corpus = _corpus([(True, True), (True, False), (False, True), (False, True)])
    rates = simulate(corpus, judged(corpus, [0.9, 0.9, 0.9, 0.1], 0.5))
    assert rates == {"detection": 0.5, "false_per_plain": 0.5}


def test_the_chosen_threshold_never_exceeds_the_false_alarm_budget() -> None:
    corpus = _corpus([(True, True)] * 5 + [(False, True)] * 5)
    scores = [0.9] * 5 + [0.3, 0.4, 0.5, 0.6, 0.7]
    threshold, rates = choose_threshold(corpus, scores, max_false=0.2)
    assert rates["false_per_plain"] <= 0.2 and rates["detection"] == 1.0 and 0.6 < threshold <= 0.9


def test_threshold_for_flags_at_most_the_asked_share_of_plain_sessions() -> None:
    from reconcile_app.evaluation.training import TurnSample

    samples = [TurnSample("p", f"s{i}", f"t{i}", False, False, "", {"t": "", "c": ""}, {}) for i in range(20)]
    scores = [i / 20 for i in range(20)]
    threshold = threshold_for(samples, scores, 0.1)
    assert sum(s >= threshold for s in scores) <= 2
