"""Read-only admin for the audit trail."""
from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_label", "role", "action", "outcome", "patient_pk", "object_type", "object_id")
    list_filter = ("outcome", "role", "action")
    search_fields = ("actor_label", "action", "object_id", "request_id")
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
