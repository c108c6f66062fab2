"""Triage services: idempotent routing with actions, the workflow's conditional updates, the SLA sweep."""
from __future__ import annotations

from datetime import timedelta

import pytest
import responses
from django.core import mail
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.core.exceptions import ValidationFailed
from reconcile_app.transcripts.models import CoachingPlatform
from reconcile_app.triage import services
from reconcile_app.triage.models import RoutingRule, TriageAlert, TriageEvent, TriageItem

from .factories import finding_create, item_create, patient_create, session_create

pytestmark = pytest.mark.django_db
WEBHOOK = "https://coach.example.org/hooks/clarify"


def test_default_rules_exist_after_migration():
    names = list(RoutingRule.objects.values_list("queue", flat=True))
    assert names == ["Care team - urgent", "Care team - urgent", "Coaching follow-up", "Next visit"]


def test_routing_creates_items_for_discrepancies_only_and_is_idempotent():
    gap = finding_create(kind="gap", severity="low", safety_critical=False)
    agreement = finding_create(kind="agreement", severity="low", safety_critical=False)
    first = services.triage_items_route(findings=[gap, agreement])
    again = services.triage_items_route(findings=[gap, agreement])
    assert [i.finding_id for i in first] == [gap.pk]
    assert [i.pk for i in again] == [first[0].pk]
    assert TriageItem.objects.count() == 1
    item = first[0]
    assert (item.queue, item.band, item.resource_types) == ("Next visit", 5, "|MedicationRequest|")
    assert TriageEvent.objects.filter(item=item, action="logged_next_visit").exists()


def test_safety_critical_alerts_the_care_team_in_app_and_by_email_without_clinical_text(nurse):
    nurse.email = "nina@example.org"
    nurse.save()
    item = item_create(severity="medium", safety_critical=True)
    assert item.queue == "Care team - urgent" and item.priority == 1
    assert TriageAlert.objects.filter(item=item, reason="routed").exists()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["nina@example.org"]
    assert "lisinopril" not in mail.outbox[0].body.lower() and f"/triage/findings/{item.finding_id}/" in mail.outbox[0].body
    assert item.sla_due_at - item.created_at < timedelta(hours=2)


@responses.activate
def test_medium_asks_the_coach_to_clarify_through_the_platform_webhook(django_capture_on_commit_callbacks):
    responses.post(WEBHOOK, json={"ok": True})
    platform = CoachingPlatform.objects.create(name="CoachCo", token_hash="h" * 64, token_prefix="cc", webhook_url=WEBHOOK)
    patient = patient_create()
    session = session_create(patient=patient, platform=platform)
    finding = finding_create(patient=patient, session=session, severity="medium", safety_critical=False)
    with django_capture_on_commit_callbacks(execute=True):
        (item,) = services.triage_items_route(findings=[finding])
    item.refresh_from_db()
    assert item.queue == "Coaching follow-up"
    assert item.action_status == "done"
    body = responses.calls[0].request.body
    assert b'"type": "clarification_request"' in body and session.external_id.encode() in body


@responses.activate
def test_clarification_failures_retry_then_stay_visible(django_capture_on_commit_callbacks, eager_retries):
    responses.post(WEBHOOK, status=503)
    platform = CoachingPlatform.objects.create(name="CoachCo", token_hash="h" * 64, token_prefix="cc", webhook_url=WEBHOOK)
    patient = patient_create()
    finding = finding_create(patient=patient, session=session_create(patient=patient, platform=platform), severity="medium", safety_critical=False)
    with django_capture_on_commit_callbacks(execute=True):
        (item,) = services.triage_items_route(findings=[finding])
    item.refresh_from_db()
    assert item.action_status == "failed"
    assert "gave up after 6 tries" in item.action_error
    assert len(responses.calls) == 6


def test_clarification_without_a_webhook_says_not_configured_rather_than_failed(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        item = item_create(severity="medium", safety_critical=False)
    item.refresh_from_db()
    assert item.action_status == "not_configured" and "no active coaching platform webhook" in item.action_error


def test_claim_is_a_conditional_update_two_nurses_cannot_both_claim(nurse, admin_user):
    item = item_create()
    stale = TriageItem.objects.get(pk=item.pk)
    services.triage_item_claim(item=item, user=nurse)
    with pytest.raises(services.TransitionRefused):
        services.triage_item_claim(item=stale, user=admin_user)
    item.refresh_from_db()
    assert item.status == "in_review" and item.assignee == nurse
    assert AuditEvent.objects.filter(action="triage.claim", outcome="denied", patient_pk=item.patient_id).exists()


def test_a_claimed_item_is_decided_by_its_claimer(nurse):
    from reconcile_app.core.roles import Role
    from reconcile_app.core.services import user_create

    other = user_create(username="olga", role=Role.NURSE, password=None)
    item = item_create()
    services.triage_item_claim(item=item, user=nurse)
    with pytest.raises(services.TransitionRefused):
        services.triage_item_confirm(item=item, user=other)
    confirmed = services.triage_item_confirm(item=item, user=nurse)
    assert confirmed.status == "confirmed" and confirmed.decided_at is not None


def test_dismiss_needs_a_reason_and_other_needs_words(nurse):
    item = item_create()
    with pytest.raises(ValidationFailed):
        services.triage_item_dismiss(item=item, user=nurse, reason="")
    with pytest.raises(ValidationFailed):
        services.triage_item_dismiss(item=item, user=nurse, reason="other", text="  ")
    done = services.triage_item_dismiss(item=item, user=nurse, reason="duplicate")
    assert (done.status, done.dismiss_reason) == ("dismissed", "duplicate")
    with pytest.raises(services.TransitionRefused):
        services.triage_item_confirm(item=done, user=nurse)


def test_every_step_is_logged_and_audited_with_the_patient(nurse):
    item = item_create()
    services.triage_item_claim(item=item, user=nurse)
    services.triage_note_add(item=item, user=nurse, text="Called the patient.")
    services.triage_item_confirm(item=item, user=nurse)
    services.triage_item_resolve(item=item, user=nurse)
    actions = list(TriageEvent.objects.filter(item=item).values_list("action", flat=True))
    assert actions == ["routed", "claim", "note", "confirm", "resolve"]
    audited = set(AuditEvent.objects.filter(patient_pk=item.patient_id).values_list("action", flat=True))
    assert {"triage.route", "triage.claim", "triage.note", "triage.confirm", "triage.resolve"} <= audited
    assert not AuditEvent.objects.filter(details__icontains="Called the patient").exists()


def test_bulk_dismiss_skips_items_that_changed_meanwhile(nurse):
    a, b = item_create(), item_create()
    services.triage_item_dismiss(item=b, user=nurse, reason="duplicate")
    done, refused = services.triage_items_bulk_dismiss(items=[a, TriageItem.objects.get(pk=b.pk)], user=nurse, reason="already_known")
    assert (done, refused) == (1, 1)


def test_sla_sweep_escalates_breaches_once_and_alerts(nurse):
    late = item_create(severity="low", safety_critical=False)
    on_time = item_create(severity="low", safety_critical=False)
    TriageItem.objects.filter(pk=late.pk).update(sla_due_at=timezone.now() - timedelta(minutes=1))
    assert services.sla_breaches_escalate() == 1
    assert services.sla_breaches_escalate() == 0
    late.refresh_from_db()
    on_time.refresh_from_db()
    assert late.status == "escalated" and on_time.status == "new"
    assert TriageAlert.objects.filter(item=late, reason="sla_breach").exists()
    assert TriageEvent.objects.filter(item=late, action="escalate", actor=None).exists()


def test_sla_task_is_registered_under_the_beat_name():
    from config.celery_app import app
    from reconcile_app.triage import tasks  # noqa: F401  (a worker autodiscovers it; a lone test must import it)

    assert "reconcile_app.triage.tasks.sla_escalate_task" in app.tasks
