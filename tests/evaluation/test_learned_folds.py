"""Author folds: whole authors held out together, deterministic, balanced; the judge beats the rules or stays off."""
from __future__ import annotations

from types import SimpleNamespace

from reconcile_app.evaluation.training import (
    JUDGE_OFF,
    Corpus,
    TurnCase,
    against_rules,
    author_of,
    fallback_sweep,
    fold_of,
    judged,
    operating_point,
    with_fallbacks,
)


def _patients(keys: list[str]) -> list:
    return [SimpleNamespace(key=k) for k in keys]


def test_the_author_is_the_letters_of_the_id_or_else_the_dataset() -> None:
    assert author_of("tune/ava03") == "ava"
    assert author_of("incoming/zoe01") == "zoe"
    assert author_of("dev/p07") == "dev"  # one letter is not an author: dev p01-p10 is one author
    assert author_of("demo_data/walter-ostrowski") == "demo_data"


def test_folds_hold_whole_authors_and_are_balanced_and_deterministic() -> None:
    keys = [f"tune/{a}0{i}" for a in ("ava", "ben", "cal", "dee", "gus", "hal") for i in range(1, 7)]
    keys += [f"incoming/{a}0{i}" for a in ("pia", "quy", "raf", "sol") for i in range(1, 4)] + [f"dev/p{i:02d}" for i in range(1, 11)]
    folds = fold_of(_patients(keys), 5)
    assert folds == fold_of(_patients(list(reversed(keys))), 5)
    by_author: dict[str, set[int]] = {}
    for key, k in folds.items():
        by_author.setdefault(author_of(key), set()).add(k)
    assert all(len(ks) == 1 for ks in by_author.values())
    sizes = [sum(1 for k in folds.values() if k == i) for i in range(5)]
    assert max(sizes) - min(sizes) <= 6 and min(sizes) > 0


def test_too_few_authors_fall_back_to_patient_folds() -> None:
    folds = fold_of(_patients(["demo/a-x", "demo/b-y", "demo/c-z"]), 3)
    assert sorted(folds.values()) == [0, 1, 2]


def _case(i: int, scenario: bool, emits: bool, rule_flag: bool, **kw) -> TurnCase:
    return TurnCase("p", f"s{i}", f"t{i}", scenario, scenario, None, {}, emits, rule_flag, **kw)


def test_the_judge_beats_the_rules_only_when_strictly_better_on_one_figure_and_no_worse_on_the_other() -> None:
    cases = [_case(0, True, True, True), _case(1, True, True, True), _case(2, False, True, True), _case(3, False, True, False)]
    corpus = Corpus(cases, scenario_sessions=2, plain_sessions=2)
    rules = {"detection": 1.0, "false_per_plain": 0.5}
    threshold, rates, beats = against_rules(corpus, [0.9, 0.8, 0.2, 0.1], rules)
    assert beats and rates == {"detection": 1.0, "false_per_plain": 0.0} and 0.2 < threshold <= 0.8
    threshold, rates, beats = against_rules(corpus, [0.9, 0.1, 0.8, 0.1], rules)
    assert not beats or rates["detection"] >= 1.0
    assert against_rules(corpus, [0.1, 0.1, 0.9, 0.9], rules)[0] == JUDGE_OFF


def test_fallbacks_ship_only_where_they_add_detection_within_the_extra_false_budget() -> None:
    cases = [_case(0, True, True, True, fallback=True, delta=0.9), _case(1, False, True, True, fallback=True, delta=0.5),
             _case(2, True, True, True, core_flag=True)]
    corpus = Corpus(cases, scenario_sessions=2, plain_sessions=100)
    sweep = fallback_sweep(corpus, extra_false=0.01)
    assert sweep["adds_detection"] and sweep["with_fallbacks"]["detection"] == 1.0 and 0.5 < sweep["with_fallbacks"]["threshold"] <= 0.9
    kept = with_fallbacks(corpus, sweep["with_fallbacks"]["threshold"])
    assert [c.turn for c in kept.cases] == ["t0", "t2"]
    assert not fallback_sweep(Corpus(cases[1:], 1, 100), extra_false=0.01)["adds_detection"]


def test_the_two_operating_points_trade_false_discrepancies_against_detection() -> None:
    cases = [_case(0, True, True, True), _case(1, True, True, False), _case(2, False, True, True), _case(3, False, True, False)]
    corpus = Corpus(cases, scenario_sessions=2, plain_sessions=2)
    rules = {"detection": 0.5, "false_per_plain": 0.5}
    scores = [0.9, 0.5, 0.6, 0.1]
    _, fewer, beats = against_rules(corpus, scores, rules, "fewer_false")
    assert beats and fewer == {"detection": 0.5, "false_per_plain": 0.0}
    _, more, beats = against_rules(corpus, scores, rules, "more_detection")
    assert beats and more == {"detection": 1.0, "false_per_plain": 0.5}


def test_the_safety_floor_counts_at_any_score_and_leaves_with_a_dropped_fallback() -> None:
    cases = [_case(0, True, True, True, floor=True, core_floor=True), _case(1, False, True, True, fallback=True, delta=0.2, floor=True,
                                                                       core_flag=False)]
    corpus = Corpus(cases, scenario_sessions=1, plain_sessions=1)
    assert judged(corpus, [0.1, 0.1], 0.5) == [True, True]
    kept = with_fallbacks(corpus, 0.5)
    assert [c.turn for c in kept.cases] == ["t0"] and judged(kept, [0.1], 0.5) == [True]
    twin = Corpus([_case(0, True, True, True)], scenario_sessions=1, plain_sessions=1)
    assert judged(twin, [0.1], 0.5) == [False]


def test_the_budget_point_takes_the_best_detection_within_the_false_budget() -> None:
    cases = [_case(0, True, True, True), _case(1, True, True, False), _case(2, False, True, True), _case(3, False, True, False)]
    corpus = Corpus(cases, scenario_sessions=2, plain_sessions=4)
    scores = [0.9, 0.5, 0.6, 0.4]
    _, rates, beats = operating_point(corpus, scores, {"detection": 0.5, "false_per_plain": 0.25}, "budget", max_false=0.25)
    assert beats and rates == {"detection": 1.0, "false_per_plain": 0.25}
    _, rates, beats = operating_point(corpus, scores, {"detection": 1.0, "false_per_plain": 0.5}, "budget", max_false=0.0)
    assert not beats and rates["false_per_plain"] == 0.0
