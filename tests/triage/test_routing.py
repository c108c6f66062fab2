"""Routing is pure: the first enabled matching rule wins; blank criteria match anything."""
from __future__ import annotations

from reconcile_app.triage.routing import RoutingFacts, RuleSpec, resource_types_text, route, rule_matches, urgency_band

SAFETY = RuleSpec(id=1, order=10, name="safety", match_safety="yes", queue="Care team - urgent", action="alert_care_team")
MEDIUM = RuleSpec(id=2, order=30, name="medium", match_severity="medium", queue="Coaching follow-up", action="ask_coach_clarify")
LOW = RuleSpec(id=3, order=40, name="low", match_severity="low", queue="Next visit", action="log_next_visit")
DEFAULTS = [LOW, MEDIUM, SAFETY]  # out of order on purpose: `order` decides


def facts(**kw) -> RoutingFacts:  # type: ignore[no-untyped-def]
    base = {"kind": "contradiction", "severity": "medium", "safety_critical": False, "category": "medication",
            "resource_types": ("MedicationRequest",)}
    base.update(kw)
    return RoutingFacts(**base)


def test_safety_critical_goes_to_the_care_team_whatever_its_severity():
    assert route(facts(safety_critical=True, severity="low"), DEFAULTS) is SAFETY


def test_medium_goes_to_the_coach_and_low_to_the_next_visit():
    assert route(facts(severity="medium"), DEFAULTS) is MEDIUM
    assert route(facts(severity="low"), DEFAULTS) is LOW


def test_no_match_leaves_the_item_unrouted():
    assert route(facts(severity="high"), DEFAULTS) is None


def test_disabled_rules_are_skipped():
    disabled = RuleSpec(id=9, order=1, name="off", enabled=False, queue="x")
    assert route(facts(severity="low"), [disabled, *DEFAULTS]) is LOW


def test_ties_in_order_break_on_id():
    a = RuleSpec(id=5, order=10, name="a", queue="A")
    b = RuleSpec(id=4, order=10, name="b", queue="B")
    assert route(facts(), [a, b]) is b


def test_every_criterion_must_hold():
    rule = RuleSpec(id=1, order=1, name="allergy gaps", match_kind="gap", match_category="allergy",
                    match_resource_type="AllergyIntolerance", match_safety="no")
    assert rule_matches(rule, facts(kind="gap", category="allergy", resource_types=("AllergyIntolerance",)))
    assert not rule_matches(rule, facts(kind="contradiction", category="allergy", resource_types=("AllergyIntolerance",)))
    assert not rule_matches(rule, facts(kind="gap", category="allergy", resource_types=("Condition",)))
    assert not rule_matches(rule, facts(kind="gap", category="allergy", resource_types=("AllergyIntolerance",), safety_critical=True))


def test_urgency_band_orders_safety_then_severity():
    bands = [urgency_band(safety_critical=s, severity=v) for s, v in
             [(True, "high"), (True, "medium"), (True, "low"), (False, "high"), (False, "medium"), (False, "low")]]
    assert bands == [0, 1, 2, 3, 4, 5]


def test_resource_types_text_matches_whole_types_only():
    text = resource_types_text(["MedicationStatement", "MedicationRequest", "MedicationRequest"])
    assert text == "|MedicationRequest|MedicationStatement|"
    assert "|Medication|" not in text
    assert resource_types_text([]) == ""
