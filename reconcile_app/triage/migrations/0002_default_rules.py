"""Default routing rules, after the dual-stream paper: safety-critical to the care team now,
medium to a conversational clarification by the coach, low to the next visit."""
from django.db import migrations

DEFAULT_RULES = [
    # order, name, match_safety, match_severity, queue, priority, sla_minutes, action
    (10, "Safety-critical: care team now", "yes", "", "Care team - urgent", 1, 60, "alert_care_team"),
    (20, "High severity: care team", "", "high", "Care team - urgent", 2, 4 * 60, "alert_care_team"),
    (30, "Medium severity: coach clarifies with the patient", "", "medium", "Coaching follow-up", 3, 3 * 24 * 60, "ask_coach_clarify"),
    (40, "Low severity: next visit", "", "low", "Next visit", 4, 30 * 24 * 60, "log_next_visit"),
]


def create_rules(apps, schema_editor):
    RoutingRule = apps.get_model("triage", "RoutingRule")
    if RoutingRule.objects.exists():
        return
    for order, name, safety, severity, queue, priority, sla, action in DEFAULT_RULES:
        RoutingRule.objects.create(order=order, name=name, match_safety=safety, match_severity=severity, queue=queue,
                                   priority=priority, sla_minutes=sla, action=action)


def remove_rules(apps, schema_editor):
    RoutingRule = apps.get_model("triage", "RoutingRule")
    RoutingRule.objects.filter(name__in=[r[1] for r in DEFAULT_RULES]).delete()


class Migration(migrations.Migration):
    dependencies = [("triage", "0001_initial")]
    operations = [migrations.RunPython(create_rules, remove_rules)]
