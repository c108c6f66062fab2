"""The ConText rules file: every rule sourced and named for its phenomenon, vocabularies expanded, patterns turned into phrases."""
from __future__ import annotations

import copy
import json

import pytest

from reconcile_app.narrative.assertion.rules import RULES_PATH, RulesError, load_rules, parse_rules, phrase_expansions


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(RULES_PATH.read_text(encoding="utf-8"))


def test_every_rule_names_a_known_source_and_its_phenomenon(raw: dict) -> None:
    rules = load_rules()
    assert rules.rules, "no rules loaded"
    for spec in rules.rules:
        assert spec.source in rules.sources, spec.literal
        assert len(spec.phenomenon.split()) >= 2, spec.literal


def test_every_disabled_default_rule_gives_its_reason(raw: dict) -> None:
    for entry in raw["default_lexicon"]["disabled"]:
        assert len(entry["why"].split()) >= 4, entry["literal"]


def test_a_rule_without_a_source_is_refused(raw: dict) -> None:
    broken = copy.deepcopy(raw)
    del broken["rules"][0]["source"]
    with pytest.raises(RulesError):
        parse_rules(broken)


def test_a_rule_of_an_unknown_category_is_refused(raw: dict) -> None:
    broken = copy.deepcopy(raw)
    broken["rules"][0]["category"] = "SOMETIMES"
    with pytest.raises(RulesError):
        parse_rules(broken)


def test_an_unknown_vocabulary_in_a_pattern_is_refused(raw: dict) -> None:
    broken = copy.deepcopy(raw)
    broken["rules"][0]["pattern"] = [{"NORM": {"IN": "@no_such_list"}}]
    with pytest.raises(RulesError):
        parse_rules(broken)


def test_vocabulary_references_expand_to_their_terms_and_relations_gain_plurals() -> None:
    rules = load_rules()
    relation = rules.vocabularies["relation"]
    assert {"brother", "brothers", "neighbor", "neighbors"} <= relation
    beneficiary = next(r for r in rules.rules if r.literal == "for my mom")
    listed = beneficiary.pattern[-1]["NORM"]["IN"]
    assert "brother" in listed and not any(str(t).startswith("@") for t in listed)


def test_fixed_patterns_become_phrases_with_optional_tokens_both_ways() -> None:
    pattern = [{"NORM": {"IN": ["my", "the"]}, "OP": "?"}, {"NORM": "nurse"}]
    assert phrase_expansions(pattern) == ["my nurse", "nurse", "the nurse"]


def test_patterns_that_need_the_token_matcher_stay_patterns() -> None:
    assert phrase_expansions([{"NORM": "will"}, {"NORM": {"NOT_IN": ["be"]}}]) is None
    assert phrase_expansions([{"ENT_TYPE": "PERSON", "OP": "+"}]) is None
    assert phrase_expansions([{"NORM": {"IN": ["a", "b"]}, "OP": "*"}]) is None
    assert phrase_expansions([{"NORM": {"IN": [str(i) for i in range(30)]}}] * 2, limit=100) is None
