"""SMART scope grammar: parsing v1/v2, registration coverage, and per-request permission."""
from __future__ import annotations

from reconcile_app.sandbox.scopes import invalid_scopes, parse_resource_scope, scope_permits, scopes_not_allowed


def test_v1_and_v2_scopes_parse_to_the_same_permissions() -> None:
    assert parse_resource_scope("patient/*.read").perms == parse_resource_scope("patient/*.rs").perms
    assert parse_resource_scope("user/Observation.cruds").perms == frozenset("cruds")
    assert parse_resource_scope("patient/Observation.rs?category=laboratory").resource_type == "Observation"


def test_malformed_scopes_are_invalid() -> None:
    assert invalid_scopes(["launch", "openid", "patient/*.rs", "patient/*.sr", "patient/*.bogus", "admin"]) == [
        "patient/*.sr", "patient/*.bogus", "admin",
    ]


def test_registration_bounds_what_may_be_requested() -> None:
    registered = "launch openid fhirUser patient/*.rs system/Observation.rs"
    assert scopes_not_allowed(["launch", "patient/Condition.r", "system/Observation.s"], registered) == []
    assert scopes_not_allowed(["patient/*.c", "system/*.rs", "offline_access"], registered) == [
        "patient/*.c", "system/*.rs", "offline_access",
    ]


def test_scope_permits_reports_the_context() -> None:
    assert scope_permits("launch patient/*.rs", resource_type="Observation", perm="r") == (True, "patient")
    assert scope_permits("patient/*.rs user/Observation.rs", resource_type="Observation", perm="s") == (True, "user")
    assert scope_permits("patient/Condition.rs", resource_type="Observation", perm="r") == (False, "")
    assert scope_permits("patient/*.rs", resource_type="Task", perm="c") == (False, "")
