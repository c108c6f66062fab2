"""The queue's facet counts, computed live by one GROUP BY, agree with counting the rows one by one."""
from __future__ import annotations

import itertools
import random
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from reconcile_app.triage.models import OPEN_STATUSES, TriageItem
from reconcile_app.triage.selectors import DUE_SOON, FACET_CATEGORIES, _counts_compute, triage_item_filter

from .factories import item_create, patient_create

pytestmark = pytest.mark.django_db


def _by_hand(items: list[TriageItem], user: User, now) -> dict:  # type: ignore[no-untyped-def]
    def n(pred) -> int:  # type: ignore[no-untyped-def]
        return sum(1 for i in items if pred(i))

    return {
        "total": len(items),
        "safety_yes": n(lambda i: i.safety_critical), "safety_no": n(lambda i: not i.safety_critical),
        "sla_breached": n(lambda i: i.sla_due_at is not None and i.sla_due_at < now),
        "sla_due_soon": n(lambda i: i.sla_due_at is not None and now <= i.sla_due_at < now + DUE_SOON),
        "sla_ok": n(lambda i: i.sla_due_at is None or i.sla_due_at >= now + DUE_SOON),
        "age_lt1d": n(lambda i: i.created_at >= now - timedelta(days=1)),
        "age_gt7d": n(lambda i: i.created_at < now - timedelta(days=7)),
        "age_1to7d": n(lambda i: now - timedelta(days=7) <= i.created_at < now - timedelta(days=1)),
        "kind_gap": n(lambda i: i.kind == "gap"), "kind_contradiction": n(lambda i: i.kind == "contradiction"),
        "severity_high": n(lambda i: i.severity == "high"), "severity_medium": n(lambda i: i.severity == "medium"),
        "severity_low": n(lambda i: i.severity == "low"),
        **{f"category_{c}": n(lambda i, c=c: i.category == c) for c in FACET_CATEGORIES},
        "status": {s: n(lambda i, s=s: i.status == s) for s in OPEN_STATUSES},
        "mine": n(lambda i: i.assignee_id == user.pk),
    }


def test_live_facet_counts_match_the_rows_for_every_filter(nurse: User) -> None:
    rng = random.Random(3)
    now = timezone.now()
    patient = patient_create()
    combos = itertools.product(["contradiction", "gap"], ["low", "medium", "high"], [False, True], ["medication", "condition", "allergy"])
    for kind, severity, safety, category in combos:
        if safety and severity == "low":
            continue
        item = item_create(patient=patient, kind=kind, severity=severity, safety_critical=safety, category=category)
        TriageItem.objects.filter(pk=item.pk).update(
            status=rng.choice(["new", "new", "in_review", "escalated", "confirmed"]),
            assignee=nurse if rng.random() < 0.4 else None,
            created_at=now - timedelta(hours=rng.choice([2, 30, 200, 400])),
            sla_due_at=rng.choice([None, now - timedelta(hours=1), now + timedelta(minutes=30), now + timedelta(days=3)]),
        )
    for filters in ({}, {"safety": "yes"}, {"kind": "gap"}, {"severity": "medium"}, {"status": "all"}, {"mine": True},
                    {"category": "allergy", "status": "in_review"}):
        rows = list(triage_item_filter(filters=filters, user=nurse, now=now))
        assert rows or filters, "the default filter must see items"
        assert _counts_compute(filters=filters, user=nurse, now=now) == _by_hand(rows, nurse, now), filters
