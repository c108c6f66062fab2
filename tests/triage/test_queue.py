"""The nurses' queue: filters as a GET form, safety-first order, counts, htmx partial, keyset pages."""
from __future__ import annotations

import zoneinfo
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.triage.models import TriageItem
from reconcile_app.triage.services import triage_item_claim

from .factories import item_create, patient_create

pytestmark = pytest.mark.django_db
URL = reverse("triage:queue")


def _ids(response) -> list[int]:  # type: ignore[no-untyped-def]
    return [item.finding_id for item in response.context["page"].items]


def test_default_order_is_safety_then_severity_then_oldest(nurse_client):
    now = timezone.now()
    low = item_create(severity="low", safety_critical=False, created_at=now - timedelta(days=9))
    high = item_create(severity="high", safety_critical=False, created_at=now - timedelta(days=1))
    safety_new = item_create(severity="medium", safety_critical=True, created_at=now)
    safety_old = item_create(severity="medium", safety_critical=True, created_at=now - timedelta(days=2))
    response = nurse_client.get(URL)
    assert response.status_code == 200
    assert _ids(response) == [safety_old.finding_id, safety_new.finding_id, high.finding_id, low.finding_id]
    assert b'data-row tabindex="0"' in response.content


def test_filters_narrow_the_rows_and_counts_follow(nurse_client):
    a = item_create(severity="high", safety_critical=True)
    item_create(severity="low", safety_critical=False, kind="gap", category="allergy",
                citations=[{"resourceType": "AllergyIntolerance", "id": "allergy-pcn"}])
    response = nurse_client.get(URL, {"safety": "yes"})
    assert _ids(response) == [a.finding_id]
    assert response.context["counts"]["total"] == 1
    assert response.context["counts"]["status"] == {"new": 1, "in_review": 0, "escalated": 0}
    gap = nurse_client.get(URL, {"kind": "gap", "resource_type": "AllergyIntolerance", "category": "allergy"})
    assert len(_ids(gap)) == 1 and _ids(gap) != [a.finding_id]
    assert nurse_client.get(URL, {"resource_type": "Condition"}).context["counts"]["total"] == 0


def test_assigned_to_me_status_age_sla_and_patient_filters(nurse_client, nurse):
    patient = patient_create()
    mine = item_create(patient=patient)
    triage_item_claim(item=mine, user=nurse)
    old = item_create(severity="low", safety_critical=False, created_at=timezone.now() - timedelta(days=10))
    TriageItem.objects.filter(pk=old.pk).update(sla_due_at=timezone.now() - timedelta(hours=1))
    assert _ids(nurse_client.get(URL, {"mine": "on"})) == [mine.finding_id]
    assert _ids(nurse_client.get(URL, {"status": "in_review"})) == [mine.finding_id]
    assert _ids(nurse_client.get(URL, {"age": "gt7d"})) == [old.finding_id]
    assert _ids(nurse_client.get(URL, {"sla": "breached"})) == [old.finding_id]
    assert _ids(nurse_client.get(URL, {"patient": patient.pk})) == [mine.finding_id]
    assert _ids(nurse_client.get(URL, {"status": "closed"})) == []


def test_invalid_filters_are_ignored_not_a_crash(nurse_client):
    item_create()
    response = nurse_client.get(URL, {"severity": "'; drop table", "patient": "abc"})
    assert response.status_code == 200 and len(_ids(response)) == 1
    # A cursor is never typed: a malformed one is a bad link, answered 400 (issue 12), never a 500.
    assert nurse_client.get(URL, {"after": "1.2.3.4.5"}).status_code == 400


def test_htmx_request_gets_only_the_rows_partial(nurse_client):
    item_create()
    response = nurse_client.get(URL, {"safety": "yes"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="queue-rows">') and "<html" not in body


def test_keyset_pages_walk_every_row_once(nurse_client):
    from reconcile_app.triage import selectors

    items = [item_create(severity=s, safety_critical=False) for s in ("low", "high", "medium", "high", "low")]
    seen: list[int] = []
    filters = {"status": "open", "sort": "urgency"}
    while True:
        page = selectors.triage_queue_page(filters=filters, user=None, limit=2)
        seen += [i.finding_id for i in page.items]
        if not page.next_cursor:
            break
        filters = {**filters, "after": page.next_cursor}
    assert sorted(seen) == sorted(i.finding_id for i in items) and len(seen) == len(set(seen))
    severities = [TriageItem.objects.get(finding_id=f).severity for f in seen]
    assert severities == ["high", "high", "medium", "low", "low"]


def test_next_page_link_carries_the_cursor(nurse_client):
    from reconcile_app.triage import selectors

    for _ in range(3):
        item_create()
    newest = nurse_client.get(URL, {"sort": "newest"})
    assert newest.status_code == 200
    page = selectors.triage_queue_page(filters={"status": "open", "sort": "oldest"}, user=None, limit=2)
    second = nurse_client.get(URL, {"sort": "oldest", "after": page.next_cursor})
    assert len(_ids(second)) == 1 and _ids(second)[0] not in [i.finding_id for i in page.items]


def test_viewing_the_queue_is_audited(nurse_client):
    nurse_client.get(URL)
    assert AuditEvent.objects.filter(action="triage.queue_view", outcome="ok").exists()


def test_hostile_text_is_escaped(nurse_client):
    patient = patient_create(name="<script>alert(1)</script>")
    item_create(patient=patient)
    body = nurse_client.get(URL).content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body


def test_cached_counts_follow_a_decision_at_once(nurse_client, nurse):
    from reconcile_app.triage.services import triage_item_dismiss

    item = item_create()
    assert nurse_client.get(URL).context["counts"]["total"] == 1
    assert nurse_client.get(URL).context["counts"]["total"] == 1  # served from the cache
    triage_item_dismiss(item=item, user=nurse, reason="duplicate")
    assert nurse_client.get(URL).context["counts"]["total"] == 0


def _searched(nurse_client, q: str, back: str = URL):  # type: ignore[no-untyped-def]
    return nurse_client.post(reverse("triage:queue_patient"), {"q": q, "back": back})


def test_the_patient_filter_finds_by_name_mrn_or_birth_date_and_keeps_the_words_out_of_the_url(nurse_client):
    from reconcile_app.fhir.models import Patient

    rosa = patient_create(name="Rosalind Whitaker")
    Patient.objects.filter(pk=rosa.pk).update(identifiers=[{"system": "urn:oid:1.2.36.146.595.217.0.1", "value": "MRN-4471"}],
                                              birth_date="1958-11-03")
    other = patient_create(name="Omar Haddad")
    hers, _ = item_create(patient=rosa), item_create(patient=other)
    for q in ("whitaker rosalind", "mrn-4471", "1958-11-03", "11/03/1958"):
        response = _searched(nurse_client, q, back=f"{URL}?severity=high")
        assert response.status_code == 302
        location = response["Location"]
        assert "hitaker" not in location.lower() and "4471" not in location and "1958" not in location
        assert f"patient={rosa.pk}" in location and "severity=high" in location
        page = nurse_client.get(location)
        assert _ids(page) == [hers.finding_id], q
        assert "Rosalind Whitaker, born 1958-11-03" in page.content.decode()
    assert AuditEvent.objects.filter(action="triage.patient_search", details__matches=1).exists()


def test_a_patient_search_without_a_match_says_so_and_keeps_the_queue(nurse_client):
    item_create()
    page = nurse_client.post(reverse("triage:queue_patient"), {"q": "Nobody Atall", "back": URL}, follow=True)
    assert "No patient matches that name, MRN or birth date." in page.content.decode()
    assert len(page.context["rows"]) == 1


def test_times_show_in_the_viewers_zone_with_the_zone_named(nurse_client, nurse):
    from reconcile_app.core.models import UserPreference

    item = item_create()
    due = timezone.now().replace(microsecond=0) + timedelta(hours=30)
    TriageItem.objects.filter(pk=item.pk).update(sla_due_at=due)
    UserPreference.objects.create(user=nurse, time_zone="America/New_York", time_zone_source="user")
    body = nurse_client.get(URL).content.decode()
    local = timezone.localtime(due, timezone=zoneinfo.ZoneInfo("America/New_York"))
    assert f"{local:%Y-%m-%d %H:%M} {local.tzname()}" in body  # e.g. "2026-01-06 10:04 EST", never bare UTC
