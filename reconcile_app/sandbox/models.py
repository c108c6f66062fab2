"""The sandbox EHR's own tables: FHIR resources, OAuth clients, its signing key, launches, codes and tokens."""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from reconcile_app.core.fields import EncryptedTextField
from reconcile_app.core.models import TimeStampedModel


class SimulatedError(models.TextChoices):
    """The failures SMART's own launcher can simulate, chosen per launch on the EHR page."""

    NONE = "", "No error"
    AUTH_INVALID_CLIENT_ID = "auth_invalid_client_id", "Authorize: invalid client_id"
    AUTH_INVALID_REDIRECT_URI = "auth_invalid_redirect_uri", "Authorize: invalid redirect_uri"
    AUTH_INVALID_SCOPE = "auth_invalid_scope", "Authorize: invalid scope"
    TOKEN_INVALID_TOKEN = "token_invalid_token", "Token endpoint: invalid token"
    TOKEN_EXPIRED_TOKEN = "token_expired_token", "Token endpoint: expired token"
    TOKEN_EXPIRED_REFRESH_TOKEN = "token_expired_refresh_token", "Token endpoint: expired refresh token"
    REQUEST_INVALID_TOKEN = "request_invalid_token", "FHIR requests: invalid token"
    REQUEST_EXPIRED_TOKEN = "request_expired_token", "FHIR requests: expired token"


class SandboxResource(models.Model):
    """One FHIR resource as loaded (or created); `patient_id` is the compartment it belongs to."""

    resource_type = models.CharField(max_length=64)
    fhir_id = models.CharField(max_length=64)
    patient_id = models.CharField(max_length=64, blank=True)
    json = models.JSONField()
    last_updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["resource_type", "fhir_id"], name="sandbox_resource_unique"),
        ]
        # Serves the only search the API offers: one type within one patient, in load order.
        indexes = [models.Index(fields=["resource_type", "patient_id", "id"], name="sandbox_resource_search_idx")]

    def __str__(self) -> str:
        return f"{self.resource_type}/{self.fhir_id}"


class SandboxClient(TimeStampedModel):
    """A registered OAuth client. Public clients have no key; asymmetric ones register a public JWK (or JWKS)."""

    client_id = models.CharField(max_length=200, unique=True)
    redirect_uris = models.JSONField(default=list, blank=True)
    jwk_public = models.JSONField(null=True, blank=True)
    scopes = models.CharField(max_length=800, help_text="The most this client may be granted (SMART v1 or v2 syntax).")
    # Where the EHR opens the app (its SMART launch endpoint), as an EHR's app registration records it.
    launch_url = models.URLField(max_length=400, blank=True)

    def __str__(self) -> str:
        return self.client_id


class SandboxKey(TimeStampedModel):
    """The sandbox's RSA key that signs id_tokens; generated once, private half encrypted at rest."""

    kid = models.CharField(max_length=64, unique=True)
    private_key_pem = EncryptedTextField()
    public_jwk = models.JSONField()

    def __str__(self) -> str:
        return self.kid


class SandboxLaunch(TimeStampedModel):
    """An EHR launch context, referenced by the opaque `launch` parameter (stored hashed)."""

    token_hash = models.CharField(max_length=64, unique=True)
    patient_id = models.CharField(max_length=64)
    practitioner_id = models.CharField(max_length=64, blank=True)
    encounter_id = models.CharField(max_length=64, blank=True)
    need_patient_banner = models.BooleanField(default=True)
    simulate_error = models.CharField(max_length=40, choices=SimulatedError.choices, blank=True)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"Launch #{self.pk}"


class SandboxGrantFields(models.Model):
    """What a code or a token carries forward: the client, the granted scope and the launch context."""

    client = models.ForeignKey(SandboxClient, on_delete=models.CASCADE)
    scope = models.CharField(max_length=800)
    patient_id = models.CharField(max_length=64, blank=True)
    practitioner_id = models.CharField(max_length=64, blank=True)
    encounter_id = models.CharField(max_length=64, blank=True)
    need_patient_banner = models.BooleanField(default=True)
    simulate_error = models.CharField(max_length=40, choices=SimulatedError.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class SandboxAuthCode(SandboxGrantFields):
    """A single-use authorization code bound to its redirect_uri and PKCE challenge."""

    code_hash = models.CharField(max_length=64, unique=True)
    redirect_uri = models.CharField(max_length=500)
    code_challenge = models.CharField(max_length=128)
    nonce = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"Code #{self.pk}"


class SandboxToken(SandboxGrantFields):
    """An access or refresh token; only its sha256 is stored. Refresh tokens rotate (single use)."""

    class Kind(models.TextChoices):
        ACCESS = "access", "Access token"
        REFRESH = "refresh", "Refresh token"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    token_hash = models.CharField(max_length=64, unique=True)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="sandbox_token_expiry_idx", condition=Q(used_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"


class SandboxAssertionJti(models.Model):
    """`jti` values of client assertions already accepted: a replay hits the unique constraint."""

    client = models.ForeignKey(SandboxClient, on_delete=models.CASCADE)
    jti = models.CharField(max_length=200)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "jti"], name="sandbox_jti_unique")]

    def __str__(self) -> str:
        return self.jti
