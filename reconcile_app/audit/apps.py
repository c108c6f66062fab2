"""App config for audit."""
from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "reconcile_app.audit"
    label = "audit"
    verbose_name = "Audit trail"
