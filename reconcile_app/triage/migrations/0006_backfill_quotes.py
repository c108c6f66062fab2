"""Existing items get their first quote, concept key and one-line summary; alerts of decided items
close; a clarification that failed only because no webhook was set up becomes "not configured"."""
from django.db import migrations
from django.utils import timezone

NO_WEBHOOK = "no active coaching platform webhook"


def backfill(apps, schema_editor):
    TriageItem = apps.get_model("triage", "TriageItem")
    TriageQuote = apps.get_model("triage", "TriageQuote")
    TriageAlert = apps.get_model("triage", "TriageAlert")
    if not TriageItem.objects.exists():
        return  # a fresh database: nothing to backfill (and no live code is imported)
    # The summary is built by the app's pure functions (no models involved), so this step reads the
    # same words as routing writes today.
    from reconcile_app.fhir.clinical import build_clinical_record
    from reconcile_app.triage.display import record_facts, said_facts
    from reconcile_app.triage.summaries import concept_key, finding_summary

    records = {}
    for item in TriageItem.objects.filter(finding__isnull=False).select_related("finding__memory", "finding__snapshot").iterator():
        finding = item.finding
        memory = finding.memory
        if finding.snapshot_id not in records:
            records[finding.snapshot_id] = build_clinical_record(finding.snapshot.resources)
        record = records[finding.snapshot_id]
        cited = [
            record_facts(citation=c, entry=record.get(str(c.get("resourceType", "")), str(c.get("id", ""))))
            for c in finding.citations or [] if isinstance(c, dict)
        ]
        summary = finding_summary(kind=finding.kind, category=finding.category, facts=said_facts(memory), record=cited)
        TriageQuote.objects.get_or_create(finding_id=finding.pk, defaults={"item_id": item.pk, "summary": summary})
        TriageItem.objects.filter(pk=item.pk).update(
            concept_key=concept_key(category=memory.category, attributes=memory.attributes or {}), summary=summary,
            last_quoted_at=item.created_at,
        )
    for status in ("confirmed", "dismissed", "resolved"):
        TriageAlert.objects.filter(item__status=status, acknowledged_at__isnull=True, closed_at__isnull=True).update(
            closed_at=timezone.now(), closed_reason=status)
    TriageItem.objects.filter(action_status="failed", action_error__startswith=NO_WEBHOOK).update(action_status="not_configured")


class Migration(migrations.Migration):
    dependencies = [("triage", "0005_quotes_summaries_alert_delivery"), ("narrative", "0001_initial"), ("fhir", "0001_initial")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
