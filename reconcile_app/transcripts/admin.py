"""Admin: platforms (revocable tokens), uploads and sessions, read-only where history matters."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import CoachingPlatform, PatientPipeline, PlatformEnrolment, Session, Upload
from .services import platform_revoke


class PlatformEnrolmentInline(admin.TabularInline):
    """What the platform may file transcripts for: patients, or organisations by identifier system."""

    model = PlatformEnrolment
    extra = 0
    raw_id_fields = ("patient",)
    fields = ("patient", "organization_system")


@admin.register(CoachingPlatform)
class CoachingPlatformAdmin(admin.ModelAdmin):
    list_display = ("name", "token_prefix", "active", "revoked_at", "created_at")
    inlines = [PlatformEnrolmentInline]
    readonly_fields = ("token_hash", "token_prefix", "revoked_at", "created_at", "updated_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are created with `manage.py create_platform_token`, which shows them once

    @admin.action(description="Revoke the token of the selected platforms")
    def revoke(self, request: HttpRequest, queryset: QuerySet[CoachingPlatform]) -> None:
        for platform in queryset:
            platform_revoke(platform_id=platform.pk, user=request.user)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Upload)
class UploadAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at", "source", "status", "patient", "size", "sealed_at")
    list_filter = ("status", "source")
    exclude = ("raw",)


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ("id", "patient", "external_id", "started_at", "pipeline_status", "withdrawn_at")
    list_filter = ("pipeline_status",)


@admin.register(PatientPipeline)
class PatientPipelineAdmin(ReadOnlyAdmin):
    list_display = ("patient", "lease_until", "last_run_at")
