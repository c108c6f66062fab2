"""Django admin for SMART: registrations without their key, launches read-only and without tokens."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from .models import EhrRegistration, SmartLaunch


@admin.register(EhrRegistration)
class EhrRegistrationAdmin(admin.ModelAdmin):
    # The private key is managed on the app's own registration page, which never shows it back.
    exclude = ("private_key_pem",)
    readonly_fields = ("discovery", "created_at", "updated_at")
    list_display = ("name", "iss", "client_id", "client_type", "write_enabled", "active")
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


@admin.register(SmartLaunch)
class SmartLaunchAdmin(admin.ModelAdmin):
    list_display = ("pk", "registration", "kind", "status", "user", "patient_fhir_id", "expires_at", "created_at")
    list_filter = ("kind", "status")
    # client_state (tokens) and state_hash stay out of the admin entirely.
    fields = ("registration", "kind", "status", "user", "patient_fhir_id", "encounter_fhir_id", "fhir_user",
              "need_patient_banner", "scopes_granted", "expires_at", "error_code", "created_at", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
