"""One open item per patient, concept and kind: a new quote joins it, findings stay one per memory per session."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.services import session_withdraw
from reconcile_app.triage import services
from reconcile_app.triage.models import TriageAlert, TriageEvent, TriageItem, TriageQuote

from .factories import BASE_TIME, finding_create, memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db
STOPPED = {"drug": "lisinopril", "action": "stopped"}


def _said(patient, *, days: int, attributes=None, kind: str = "contradiction", severity: str = "low", safety: bool = False,
          category: str = "medication"):  # type: ignore[no-untyped-def]
    """A finding from a new session `days` after the first, routed through the real service."""
    session = session_create(patient=patient)
    memory = memory_create(session=session, attributes=attributes if attributes is not None else STOPPED)
    type(memory).objects.filter(pk=memory.pk).update(mention_time=BASE_TIME + timedelta(days=days))
    memory.refresh_from_db()
    finding = finding_create(patient=patient, session=session, memory=memory, kind=kind, severity=severity,
                             safety_critical=safety, category=category)
    (item,) = services.triage_items_route(findings=[finding])
    return finding, item


def test_the_same_statement_in_two_sessions_is_one_item_with_two_quotes():
    patient = patient_create()
    first, item = _said(patient, days=0)
    second, joined = _said(patient, days=7)
    assert joined.pk == item.pk and TriageItem.objects.count() == 1
    assert Finding.objects.count() == 2  # evaluation still sees one finding per memory per session
    joined.refresh_from_db()
    assert (joined.finding_id, joined.quote_count) == (first.pk, 2)  # the item keeps its first finding's id
    assert set(TriageQuote.objects.filter(item=joined).values_list("finding_id", flat=True)) == {first.pk, second.pk}
    assert TriageEvent.objects.filter(item=joined, action="quote_joined", note__contains=f"#{second.pk}").exists()
    assert AuditEvent.objects.filter(action="triage.quote_join", object_id=str(second.pk), patient_pk=patient.pk).exists()
    assert joined.summary.startswith("Says stopped lisinopril")


def test_routing_a_joined_finding_again_changes_nothing():
    patient = patient_create()
    _said(patient, days=0)
    second, item = _said(patient, days=3)
    again = services.triage_items_route(findings=[second])
    assert [i.pk for i in again] == [item.pk] and TriageQuote.objects.count() == 2


def test_the_item_takes_the_highest_severity_and_safety_and_is_routed_again_when_more_urgent(nurse):
    nurse.email = "nina@example.org"
    nurse.save()
    patient = patient_create()
    _, item = _said(patient, days=0, severity="low")
    assert (item.queue, item.band) == ("Next visit", 5)
    _, joined = _said(patient, days=2, severity="high", safety=True)
    joined.refresh_from_db()
    assert (joined.severity, joined.safety_critical, joined.band, joined.queue) == ("high", True, 0, "Care team - urgent")
    assert joined.sla_due_at < item.sla_due_at  # the earlier SLA wins
    assert TriageAlert.objects.filter(item=joined, reason="routed", email_status="sent").exists()
    _, still = _said(patient, days=4, severity="low")
    still.refresh_from_db()
    assert (still.severity, still.band, still.quote_count) == ("high", 0, 3)  # a milder quote never lowers it


def test_another_kind_or_concept_is_another_item():
    patient = patient_create()
    _, item = _said(patient, days=0)
    _, gap = _said(patient, days=1, kind="gap")
    _, other_drug = _said(patient, days=2, attributes={"drug": "metformin", "action": "stopped"})
    _, remark = _said(patient, days=3, attributes={}, category="condition")
    _, remark_again = _said(patient, days=4, attributes={}, category="condition")
    assert len({item.pk, gap.pk, other_drug.pk, remark.pk, remark_again.pk}) == 5  # unnamed remarks never merge


def test_a_decided_item_is_not_reopened_by_a_new_quote(nurse):
    patient = patient_create()
    _, item = _said(patient, days=0)
    services.triage_item_dismiss(item=item, user=nurse, reason="already_known")
    _, new = _said(patient, days=5)
    assert new.pk != item.pk and new.status == "new"
    item.refresh_from_db()
    assert (item.status, item.quote_count) == ("dismissed", 1)


def test_withdrawing_one_session_keeps_the_item_with_its_other_quotes(admin_user):
    from reconcile_app import pipeline  # noqa: F401  (its receiver revokes the withdrawn session's memories)

    patient = patient_create()
    first, item = _said(patient, days=0, severity="high", safety=True)
    second, _ = _said(patient, days=7, severity="low")
    session_withdraw(session_id=first.session_id, user=admin_user)
    item.refresh_from_db()
    assert (item.finding_id, item.quote_count, item.severity, item.safety_critical) == (second.pk, 1, "low", False)
    session_withdraw(session_id=second.session_id, user=admin_user)
    item.refresh_from_db()  # kept, closed as withdrawn: nothing deleted in place
    assert (item.status, item.summary) == ("withdrawn", "")
    assert set(TriageQuote.objects.filter(item=item).values_list("closed_reason", flat=True)) == {"withdrawn"}


def test_the_finding_page_lists_every_quote_newest_first_and_any_quote_opens_the_item(nurse_client):
    patient = patient_create()
    first, item = _said(patient, days=0)
    second, _ = _said(patient, days=7)
    page = nurse_client.get(reverse("triage:finding_detail", args=[first.pk]))
    quotes = page.context["d"].quotes
    assert [q.finding_id for q in quotes] == [second.pk, first.pk]
    assert [q.session for q in quotes] == [second.session.external_id, first.session.external_id]
    html = page.content.decode()
    assert "2 quotes" in html and second.session.external_id in html
    via_second = nurse_client.get(reverse("triage:finding_detail", args=[second.pk]))
    assert via_second.context["item"].pk == item.pk and via_second.context["d"].finding.pk == second.pk


def test_the_queue_shows_one_row_per_item_with_its_summary_and_quote_count(nurse_client):
    patient = patient_create()
    _said(patient, days=0)
    _said(patient, days=7)
    page = nurse_client.get(reverse("triage:queue"))
    rows = page.context["rows"]
    assert len(rows) == 1 and rows[0]["quotes"] == 2
    assert rows[0]["summary"].startswith("Says stopped lisinopril") and "record: Lisinopril 10 mg tablet active" in rows[0]["summary"]
    assert "Says stopped lisinopril" in page.content.decode()
