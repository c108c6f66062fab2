"""Open items of the same patient, concept and kind routed before quotes existed become one item:
the oldest keeps its id and takes the others' quotes, events, notes and alerts; severity and safety
are the highest, the SLA the earliest, the summary the newest quote's."""
from collections import defaultdict

from django.db import migrations

OPEN = ("new", "in_review", "escalated")
SEVERITY = {1: "low", 2: "medium", 3: "high"}


def merge(apps, schema_editor):
    TriageItem = apps.get_model("triage", "TriageItem")
    groups = defaultdict(list)
    for item in TriageItem.objects.filter(status__in=OPEN).exclude(concept_key="").order_by("created_at", "id"):
        groups[(item.patient_id, item.kind, item.concept_key)].append(item)
    for items in groups.values():
        if len(items) > 1:
            _merge(apps, items[0], items[1:])


def _merge(apps, keep, rest):
    TriageItem = apps.get_model("triage", "TriageItem")
    ids = [i.pk for i in rest]
    for name in ("TriageQuote", "TriageEvent", "TriageNote", "TriageAlert"):
        # queryset.update, not save(): events stay append-only, only their item changes.
        apps.get_model("triage", name).objects.filter(item_id__in=ids).update(item_id=keep.pk)
    items = [keep, *rest]
    urgent = min(items, key=lambda i: (i.band, i.created_at, i.pk))
    newest = max(items, key=lambda i: (i.last_quoted_at or i.created_at, i.pk))
    rank = max(i.severity_rank for i in items)
    safety = any(i.safety_critical for i in items)
    dues = [i.sla_due_at for i in items if i.sla_due_at]
    types = sorted({t for i in items for t in i.resource_types.split("|") if t})
    TriageItem.objects.filter(pk=keep.pk).update(
        severity=SEVERITY[rank], severity_rank=rank, safety_critical=safety, band=(0 if safety else 3) + (3 - rank),
        resource_types=("|" + "|".join(types) + "|") if types else "", summary=newest.summary,
        last_quoted_at=newest.last_quoted_at or newest.created_at, sla_due_at=min(dues) if dues else None,
        queue=urgent.queue, priority=urgent.priority, rule_id=urgent.rule_id,
        assignee_id=keep.assignee_id or next((i.assignee_id for i in rest if i.assignee_id), None),
        quote_count=apps.get_model("triage", "TriageQuote").objects.filter(item_id=keep.pk).count(),
    )
    apps.get_model("triage", "TriageEvent").objects.create(
        item_id=keep.pk, action="quote_joined", from_status=keep.status, to_status=keep.status,
        note=f"{len(rest)} earlier item(s) of the same concept merged in",
    )
    TriageItem.objects.filter(pk__in=ids).delete()


class Migration(migrations.Migration):
    dependencies = [("triage", "0006_backfill_quotes")]

    operations = [migrations.RunPython(merge, migrations.RunPython.noop)]
