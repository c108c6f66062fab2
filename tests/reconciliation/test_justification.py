"""Justifications as pure data: exact versions, record changes, which findings a change touches, the
verdict a change must alter to matter, and the flapping guard (no database)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from reconcile_app.reconciliation.justification import (
    autoclose_allowed,
    is_touched,
    justification_for,
    record_changes,
    record_versions,
    verdict_key,
)

ORDER = {"resourceType": "MedicationRequest", "id": "m1", "status": "active", "meta": {"versionId": "3", "lastUpdated": "2026-01-02T10:00:00Z"}}
ALLERGY = {"resourceType": "AllergyIntolerance", "id": "a1", "code": {"text": "Penicillin"}}
CONDITION = {"resourceType": "Condition", "id": "c1", "code": {"text": "Asthma"}}


def test_each_cited_resource_is_recorded_with_its_exact_version_or_content_hash() -> None:
    versions = record_versions([ORDER, ALLERGY, {"resourceType": "Observation"}, "junk"])
    assert set(versions) == {("MedicationRequest", "m1"), ("AllergyIntolerance", "a1")}
    justification = justification_for(memory_id=7, memory_sha256="abc", category="medication",
                                      citations=[{"resourceType": "MedicationRequest", "id": "m1"}, {"resourceType": "Gone", "id": "x"}],
                                      snapshot_id=2, snapshot_version=5, snapshot_sha256="def", versions=versions)
    order, gone = justification["resources"]
    assert (order["versionId"], order["lastUpdated"], len(order["sha256"])) == ("3", "2026-01-02T10:00:00Z", 64)
    assert gone == {"resourceType": "Gone", "id": "x", "versionId": "", "lastUpdated": "", "sha256": ""}
    assert justification["memory"] == {"id": 7, "sha256": "abc"} and justification["snapshot"]["version"] == 5
    assert "MedicationRequest" in justification["scope"] and "Condition" not in justification["scope"]


def test_record_changes_name_what_was_added_updated_and_removed() -> None:
    before = record_versions([ORDER, ALLERGY])
    stopped = {**ORDER, "status": "stopped", "meta": {"versionId": "4"}}
    after = record_versions([stopped, CONDITION])
    assert record_changes(before, after) == {("MedicationRequest", "m1"): "updated", ("Condition", "c1"): "added",
                                             ("AllergyIntolerance", "a1"): "removed"}
    assert record_changes(before, record_versions([ALLERGY, ORDER])) == {}


def test_a_change_touches_a_finding_through_its_cited_resources_or_its_scope_only() -> None:
    versions = record_versions([ORDER, ALLERGY, CONDITION])
    med = justification_for(memory_id=1, memory_sha256="", category="medication", citations=[ORDER], snapshot_id=1,
                            snapshot_version=1, snapshot_sha256="", versions=versions)
    goal = justification_for(memory_id=2, memory_sha256="", category="lifestyle", citations=[], snapshot_id=1,
                             snapshot_version=1, snapshot_sha256="", versions=versions)
    assert is_touched(med, {("MedicationRequest", "m1"): "updated"})
    assert is_touched(med, {("MedicationStatement", "new"): "added"})  # a gap may close
    assert not is_touched(med, {("Condition", "c1"): "updated"})
    assert not is_touched(med, {("MedicationStatement", "old"): "removed"})  # not cited: removal cannot matter
    assert not is_touched(goal, {("MedicationRequest", "m1"): "updated"})
    assert not is_touched(med, {})


def test_the_same_verdict_ignores_citation_order_and_display_but_not_kind_severity_safety_or_targets() -> None:
    a = verdict_key(kind="contradiction", severity="high", safety_critical=True,
                    citations=[{"resourceType": "MedicationRequest", "id": "m1", "display": "x"}, {"resourceType": "Condition", "id": "c1"}])
    b = verdict_key(kind="contradiction", severity="high", safety_critical=True,
                    citations=[{"resourceType": "Condition", "id": "c1"}, {"resourceType": "MedicationRequest", "id": "m1", "display": "y"}])
    assert a == b
    assert a != verdict_key(kind="agreement", severity="high", safety_critical=True, citations=[ORDER, CONDITION])
    assert a != verdict_key(kind="contradiction", severity="medium", safety_critical=True, citations=[ORDER, CONDITION])


def test_the_flapping_guard_lets_a_discrepancy_close_on_its_own_once_per_window() -> None:
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    week = timedelta(days=7)
    assert autoclose_allowed(earlier_autocloses=[], now=now, window=week, limit=1)
    assert not autoclose_allowed(earlier_autocloses=[now - timedelta(days=2)], now=now, window=week, limit=1)
    assert autoclose_allowed(earlier_autocloses=[now - timedelta(days=9)], now=now, window=week, limit=1)
    assert autoclose_allowed(earlier_autocloses=[now - timedelta(days=2)], now=now, window=week, limit=2)
