"""EHR registrations and SMART launches; tokens live only here, encrypted."""
from __future__ import annotations

from django.conf import settings
from django.db import models

import json
from typing import Any

from reconcile_app.core.fields import EncryptedJSONField, EncryptedTextField, encrypt_str
from reconcile_app.core.models import TimeStampedModel


class TokenStateField(EncryptedJSONField):
    """EncryptedJSONField whose write path encrypts the JSON text directly.

    core's EncryptedJSONField hands the JSON text to TextField.get_prep_value, which calls its
    to_python and turns the text back into a dict before encryption (then fails); until core is
    fixed, this field serializes and encrypts in one step.
    """

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return encrypt_str(json.dumps(value, sort_keys=True))


class EhrRegistration(TimeStampedModel):
    class ClientType(models.TextChoices):
        PUBLIC = "public", "Public (PKCE only)"
        CONFIDENTIAL = "confidential", "Confidential (private_key_jwt)"

    name = models.CharField(max_length=120)
    iss = models.URLField(max_length=400, unique=True, help_text="FHIR base URL the EHR sends as `iss`.")
    client_id = models.CharField(max_length=200)
    client_type = models.CharField(max_length=20, choices=ClientType.choices, default=ClientType.PUBLIC)
    scopes = models.CharField(max_length=500, default="launch openid fhirUser patient/*.rs offline_access")
    backend_client_id = models.CharField(max_length=200, blank=True)
    backend_scopes = models.CharField(max_length=500, default="system/*.rs", blank=True)
    private_key_pem = EncryptedTextField(blank=True, help_text="PEM private key for private_key_jwt (encrypted at rest).")
    key_id = models.CharField(max_length=100, blank=True)
    jwks_url = models.URLField(max_length=400, blank=True)
    frame_ancestors = models.CharField(max_length=500, blank=True, help_text="Space-separated origins allowed to frame the app.")
    write_enabled = models.BooleanField(default=False, help_text="Request write scopes and write DetectedIssue on confirm.")
    # Discovery results (.well-known/smart-configuration), refreshed on launch.
    discovery = models.JSONField(default=dict, blank=True)
    active = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name


class SmartLaunch(TimeStampedModel):
    class Kind(models.TextChoices):
        EHR = "ehr", "EHR launch"
        STANDALONE = "standalone", "Standalone launch"
        BACKEND = "backend", "Backend Services"

    class Status(models.TextChoices):
        PENDING = "pending", "Authorizing"
        ACTIVE = "active", "Active"
        EXPIRED = "expired", "Expired"
        FAILED = "failed", "Failed"
        REVOKED = "revoked", "Revoked"

    registration = models.ForeignKey(EhrRegistration, on_delete=models.PROTECT, related_name="launches")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # sha256 of the OAuth state: the clear value only ever sits in the browser session.
    state_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    session_key_hash = models.CharField(max_length=64, blank=True)
    patient_fhir_id = models.CharField(max_length=64, blank=True)
    encounter_fhir_id = models.CharField(max_length=64, blank=True)
    fhir_user = models.CharField(max_length=200, blank=True)
    need_patient_banner = models.BooleanField(default=True)
    scopes_granted = models.CharField(max_length=800, blank=True)
    # fhirclient's state dict (includes access/refresh tokens and PKCE verifier): encrypted.
    client_state = TokenStateField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=60, blank=True)
    # The id_token's subject and OpenID session id: an EHR's back-channel logout names one of them.
    id_token_sub = models.CharField(max_length=255, blank=True)
    id_token_sid = models.CharField(max_length=255, blank=True)

    class Meta:
        indexes = [models.Index(fields=["registration", "status"], name="smart_launch_status_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"
