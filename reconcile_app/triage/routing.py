"""Routing as pure functions: which rule catches a discrepancy, and the urgency band of an item."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SEVERITY_RANK = {"low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True)
class RoutingFacts:
    """What a rule can look at: the finding's columns, never its text."""

    kind: str
    severity: str
    safety_critical: bool
    category: str
    resource_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleSpec:
    id: int
    order: int
    name: str
    enabled: bool = True
    match_kind: str = ""
    match_severity: str = ""
    match_safety: str = ""  # "" any, "yes", "no"
    match_category: str = ""
    match_resource_type: str = ""
    queue: str = ""
    priority: int = 3
    sla_minutes: int = 24 * 60
    action: str = "log_next_visit"


def rule_matches(rule: RuleSpec, facts: RoutingFacts) -> bool:
    """Blank criteria match anything; every given criterion must hold."""
    if rule.match_kind and rule.match_kind != facts.kind:
        return False
    if rule.match_severity and rule.match_severity != facts.severity:
        return False
    if rule.match_safety == "yes" and not facts.safety_critical:
        return False
    if rule.match_safety == "no" and facts.safety_critical:
        return False
    if rule.match_category and rule.match_category != facts.category:
        return False
    if rule.match_resource_type and rule.match_resource_type not in facts.resource_types:
        return False
    return True


def route(facts: RoutingFacts, rules: Sequence[RuleSpec]) -> RuleSpec | None:
    """The first enabled rule in (order, id) that matches, or None (the item stays unrouted)."""
    for rule in sorted(rules, key=lambda r: (r.order, r.id)):
        if rule.enabled and rule_matches(rule, facts):
            return rule
    return None


def severity_rank(severity: str) -> int:
    return SEVERITY_RANK.get(severity, 1)


def urgency_band(*, safety_critical: bool, severity: str) -> int:
    """0 (safety-critical, high) … 5 (low): ascending order is the triage order."""
    return (0 if safety_critical else 3) + (3 - severity_rank(severity))


def resource_types_text(types: Sequence[str]) -> str:
    """Encode cited types as "|A|B|" so `contains="|A|"` matches exactly one type."""
    unique = sorted({t for t in types if t and "|" not in t})
    return ("|" + "|".join(unique) + "|") if unique else ""
