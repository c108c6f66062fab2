"""Sandbox EHR writes: loading data, registering clients, launches, codes, tokens and created resources."""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from .fhirdata import CREATABLE_TYPES, bundle_resources, resource_patient_id
from .selectors import human_name
from .models import (
    SandboxAssertionJti,
    SandboxAuthCode,
    SandboxClient,
    SandboxKey,
    SandboxLaunch,
    SandboxResource,
    SandboxToken,
    SimulatedError,
)

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo_data"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_ALGORITHMS = ["RS384", "ES384"]
MAX_ASSERTION_LIFETIME = timedelta(minutes=5)


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _seconds(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


class OAuthError(Exception):
    """An OAuth error response: `error` is the RFC 6749 code, `description` is safe to show."""

    def __init__(self, error: str, description: str, *, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


# --- data -------------------------------------------------------------------------------------------


@transaction.atomic
def sandbox_bundle_load(*, bundle: dict[str, Any]) -> int:
    """Upsert every resource of a Bundle; returns how many were written."""
    resources = bundle_resources(bundle)
    for resource in resources:
        SandboxResource.objects.update_or_create(
            resource_type=resource["resourceType"],
            fhir_id=str(resource["id"]),
            defaults={"patient_id": resource_patient_id(resource), "json": resource},
        )
    return len(resources)


def sandbox_path_load(*, path: Path) -> int:
    """Load a Bundle file, or every `*.json` Bundle under a directory (recursively)."""
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    total = 0
    for file in files:
        document = json.loads(file.read_text(encoding="utf-8"))
        if document.get("resourceType") == "Bundle":
            total += sandbox_bundle_load(bundle=document)
    return total


def sandbox_seed_demo() -> int:
    """Load the demo patients shipped with the app (their bundle.json files; transcripts are separate)."""
    return sum(sandbox_path_load(path=p) for p in sorted(DEMO_DATA_DIR.glob("*/bundle.json")))


@transaction.atomic
def sandbox_resource_create(*, resource: dict[str, Any]) -> SandboxResource:
    """Create one of the writable types with a server-assigned id (any client id is replaced)."""
    if resource.get("resourceType") not in CREATABLE_TYPES:
        raise ValueError("resource type is not writable in the sandbox")
    body = dict(resource)
    body["id"] = uuid.uuid4().hex
    body["meta"] = {"versionId": "1", "lastUpdated": timezone.now().isoformat()}
    return SandboxResource.objects.create(
        resource_type=body["resourceType"], fhir_id=body["id"], patient_id=resource_patient_id(body), json=body
    )


def _next_version(current: dict[str, Any]) -> str:
    meta = current.get("meta") if isinstance(current.get("meta"), dict) else {}
    try:
        return str(int(meta.get("versionId") or 1) + 1)
    except (TypeError, ValueError):
        return "2"


@transaction.atomic
def sandbox_resource_update(*, resource_type: str, fhir_id: str, resource: dict[str, Any]) -> SandboxResource:
    """Replace a resource as an EHR update does: same id, the next versionId, a new lastUpdated.
    Raises SandboxResource.DoesNotExist when there is nothing to update."""
    row = SandboxResource.objects.select_for_update().get(resource_type=resource_type, fhir_id=fhir_id)
    body = dict(resource)
    body["resourceType"], body["id"] = resource_type, fhir_id
    body["meta"] = {**(body.get("meta") if isinstance(body.get("meta"), dict) else {}),
                    "versionId": _next_version(row.json), "lastUpdated": timezone.now().isoformat()}
    row.json = body
    row.patient_id = resource_patient_id(body) or row.patient_id
    row.save(update_fields=["json", "patient_id", "last_updated"])
    return row


def sandbox_medication_stop(*, fhir_id: str, resource_type: str = "MedicationRequest") -> SandboxResource:
    """The EHR's 'stop' on a medication: the order (or statement) becomes stopped, a new version."""
    row = SandboxResource.objects.get(resource_type=resource_type, fhir_id=fhir_id)
    return sandbox_resource_update(resource_type=resource_type, fhir_id=fhir_id, resource={**row.json, "status": "stopped"})


@transaction.atomic
def sandbox_resource_delete(*, resource_type: str, fhir_id: str) -> bool:
    """Delete one of the app-writable types (what apps wrote, they may take back); False when absent."""
    if resource_type not in CREATABLE_TYPES:
        raise ValueError("only resources apps write can be deleted in the sandbox")
    deleted, _ = SandboxResource.objects.filter(resource_type=resource_type, fhir_id=fhir_id).delete()
    return bool(deleted)


# --- clients and keys -------------------------------------------------------------------------------


@transaction.atomic
def sandbox_client_register(
    *, client_id: str, redirect_uris: list[str], jwk_public: dict | None = None, scopes: str, launch_url: str = ""
) -> SandboxClient:
    """Create or update a client registration (idempotent on client_id)."""
    client, _ = SandboxClient.objects.update_or_create(
        client_id=client_id,
        defaults={"redirect_uris": list(redirect_uris), "jwk_public": jwk_public, "scopes": scopes, "launch_url": launch_url},
    )
    return client


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@transaction.atomic
def sandbox_key_get() -> SandboxKey:
    """The id_token signing key, generated on first use."""
    key = SandboxKey.objects.select_for_update().order_by("id").first()
    if key:
        return key
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = private.public_key().public_numbers()
    kid = secrets.token_hex(8)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    jwk = {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": _b64(numbers.n), "e": _b64(numbers.e)}
    return SandboxKey.objects.create(kid=kid, private_key_pem=pem, public_jwk=jwk)


# --- launches and codes -----------------------------------------------------------------------------


def sandbox_launch_create(
    *, patient_id: str, practitioner_id: str = "", encounter_id: str = "", simulate_error: str = "",
    need_patient_banner: bool = True,
) -> str:
    """Record an EHR launch context; returns the opaque launch token (only its hash is stored)."""
    token = secrets.token_urlsafe(24)
    SandboxLaunch.objects.create(
        token_hash=_sha256(token), patient_id=patient_id, practitioner_id=practitioner_id,
        encounter_id=encounter_id, simulate_error=simulate_error, need_patient_banner=need_patient_banner,
        expires_at=timezone.now() + timedelta(seconds=_seconds("SANDBOX_LAUNCH_SECONDS", 3600)),
    )
    return token


def sandbox_launch_get(*, token: str) -> SandboxLaunch | None:
    return SandboxLaunch.objects.filter(token_hash=_sha256(token), expires_at__gt=timezone.now()).first()


@dataclass
class Grant:
    """What a user (or a launch) approved at the authorize endpoint."""

    client: SandboxClient
    scope: str
    patient_id: str = ""
    practitioner_id: str = ""
    encounter_id: str = ""
    need_patient_banner: bool = True
    simulate_error: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {
            "client": self.client, "scope": self.scope, "patient_id": self.patient_id,
            "practitioner_id": self.practitioner_id, "encounter_id": self.encounter_id,
            "need_patient_banner": self.need_patient_banner, "simulate_error": self.simulate_error,
        }


def sandbox_code_issue(*, grant: Grant, redirect_uri: str, code_challenge: str, nonce: str = "") -> str:
    code = secrets.token_urlsafe(32)
    SandboxAuthCode.objects.create(
        code_hash=_sha256(code), redirect_uri=redirect_uri, code_challenge=code_challenge, nonce=nonce,
        expires_at=timezone.now() + timedelta(seconds=_seconds("SANDBOX_CODE_SECONDS", 120)),
        **grant.fields(),
    )
    return code


# --- tokens -----------------------------------------------------------------------------------------


def _pkce_s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _claim_once(model: type[SandboxAuthCode] | type[SandboxToken], row_id: int) -> bool:
    """Mark a code or refresh token used; False when another request got there first."""
    return model.objects.filter(id=row_id, used_at__isnull=True).update(used_at=timezone.now()) == 1


def _id_token(*, grant: Grant, fhir_base: str, nonce: str = "") -> str:
    key = sandbox_key_get()
    now = timezone.now()
    claims: dict[str, Any] = {
        "iss": fhir_base, "aud": grant.client.client_id, "sub": grant.practitioner_id or "anonymous",
        "iat": int(now.timestamp()), "exp": int((now + timedelta(hours=1)).timestamp()),
    }
    if grant.practitioner_id:
        claims["fhirUser"] = f"Practitioner/{grant.practitioner_id}"
        # OpenID's `name` claim, so the app can show who is signed in rather than an account id.
        row = SandboxResource.objects.filter(resource_type="Practitioner", fhir_id=grant.practitioner_id).values_list("json", flat=True).first()
        if row:
            claims["name"] = human_name(row)
    if nonce:
        claims["nonce"] = nonce
    return jwt.encode(claims, key.private_key_pem, algorithm="RS256", headers={"kid": key.kid})


def _token_response(*, grant: Grant, fhir_base: str, nonce: str = "") -> dict[str, Any]:
    """Issue an access token (and a refresh token with offline_access) and build the JSON response."""
    now = timezone.now()
    lifetime = _seconds("SANDBOX_ACCESS_TOKEN_SECONDS", 3600)
    access = secrets.token_urlsafe(32)
    SandboxToken.objects.create(
        kind=SandboxToken.Kind.ACCESS, token_hash=_sha256(access), expires_at=now + timedelta(seconds=lifetime),
        **grant.fields(),
    )
    scopes = grant.scope.split()
    body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": lifetime, "scope": grant.scope}
    if "offline_access" in scopes or "online_access" in scopes:
        refresh = secrets.token_urlsafe(32)
        SandboxToken.objects.create(
            kind=SandboxToken.Kind.REFRESH, token_hash=_sha256(refresh),
            expires_at=now + timedelta(seconds=_seconds("SANDBOX_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600)),
            **grant.fields(),
        )
        body["refresh_token"] = refresh
    if grant.patient_id:
        body["patient"] = grant.patient_id
        body["need_patient_banner"] = grant.need_patient_banner
    if grant.encounter_id:
        body["encounter"] = grant.encounter_id
    if "openid" in scopes and ("fhirUser" in scopes or "profile" in scopes):
        body["id_token"] = _id_token(grant=grant, fhir_base=fhir_base, nonce=nonce)
    return body


def _grant_of(row: SandboxAuthCode | SandboxToken) -> Grant:
    return Grant(
        client=row.client, scope=row.scope, patient_id=row.patient_id, practitioner_id=row.practitioner_id,
        encounter_id=row.encounter_id, need_patient_banner=row.need_patient_banner, simulate_error=row.simulate_error,
    )


@transaction.atomic
def sandbox_token_for_code(
    *, code: str, client_id: str, redirect_uri: str, code_verifier: str, fhir_base: str,
    client_assertion: str = "", token_url: str = "",
) -> dict[str, Any]:
    row = SandboxAuthCode.objects.select_related("client").filter(code_hash=_sha256(code)).first()
    if row is None or row.used_at is not None:
        raise OAuthError("invalid_grant", "The authorization code is unknown or was already used.")
    if row.simulate_error == SimulatedError.TOKEN_INVALID_TOKEN:
        raise OAuthError("invalid_grant", "Simulated error: invalid token.")
    if row.simulate_error == SimulatedError.TOKEN_EXPIRED_TOKEN or row.expires_at <= timezone.now():
        raise OAuthError("invalid_grant", "The authorization code has expired.")
    if client_id and client_id != row.client.client_id:
        raise OAuthError("invalid_grant", "The code was issued to another client.")
    if redirect_uri != row.redirect_uri:
        raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request.")
    if not code_verifier or not secrets.compare_digest(_pkce_s256(code_verifier), row.code_challenge):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge.")
    _client_authenticate(client=row.client, assertion=client_assertion, token_url=token_url)
    if not _claim_once(SandboxAuthCode, row.id):
        raise OAuthError("invalid_grant", "The authorization code was already used.")
    return _token_response(grant=_grant_of(row), fhir_base=fhir_base, nonce=row.nonce)


def _client_authenticate(*, client: SandboxClient, assertion: str, token_url: str) -> None:
    """Clients that registered a key are confidential: they must prove it on every grant. Public clients rely on PKCE."""
    if client.jwk_public:
        if not assertion:
            raise OAuthError("invalid_client", "This client must authenticate with a client_assertion.", status=401)
        _assertion_verify(client=client, assertion=assertion, token_url=token_url)


@transaction.atomic
def sandbox_token_refresh(
    *, refresh_token: str, client_id: str, fhir_base: str, client_assertion: str = "", token_url: str = ""
) -> dict[str, Any]:
    row = (
        SandboxToken.objects.select_related("client")
        .filter(kind=SandboxToken.Kind.REFRESH, token_hash=_sha256(refresh_token)).first()
    )
    if row is None or row.used_at is not None:
        raise OAuthError("invalid_grant", "The refresh token is unknown or was already used.")
    if row.simulate_error == SimulatedError.TOKEN_EXPIRED_REFRESH_TOKEN or row.expires_at <= timezone.now():
        raise OAuthError("invalid_grant", "The refresh token has expired.")
    if client_id and client_id != row.client.client_id:
        raise OAuthError("invalid_grant", "The refresh token was issued to another client.")
    _client_authenticate(client=row.client, assertion=client_assertion, token_url=token_url)
    if not _claim_once(SandboxToken, row.id):
        raise OAuthError("invalid_grant", "The refresh token was already used.")
    return _token_response(grant=_grant_of(row), fhir_base=fhir_base)


def _client_key(client: SandboxClient, kid: str | None) -> jwt.PyJWK:
    registered = client.jwk_public or {}
    keys = registered.get("keys") if "keys" in registered else [registered]
    for key in keys or []:
        if not kid or key.get("kid") in (None, kid):
            return jwt.PyJWK(key)
    raise OAuthError("invalid_client", "No registered key matches the assertion's kid.", status=401)


def _assertion_verify(*, client: SandboxClient, assertion: str, token_url: str) -> None:
    """SMART Backend Services client authentication (private_key_jwt)."""
    if not client.jwk_public:
        raise OAuthError("invalid_client", "The client has no registered public key.", status=401)
    try:
        header = jwt.get_unverified_header(assertion)
        if header.get("alg") not in ASSERTION_ALGORITHMS:
            raise OAuthError("invalid_client", "Assertion algorithm must be RS384 or ES384.", status=401)
        claims = jwt.decode(
            assertion, _client_key(client, header.get("kid")).key, algorithms=ASSERTION_ALGORITHMS,
            audience=token_url, issuer=client.client_id, options={"require": ["exp", "jti", "iss", "sub", "aud"]},
        )
    except jwt.PyJWTError as exc:
        raise OAuthError("invalid_client", f"Client assertion rejected: {type(exc).__name__}.", status=401) from exc
    if claims["sub"] != client.client_id:
        raise OAuthError("invalid_client", "Assertion sub must equal the client_id.", status=401)
    expires = datetime.fromtimestamp(int(claims["exp"]), tz=UTC)
    if expires - timezone.now() > MAX_ASSERTION_LIFETIME + timedelta(seconds=30):
        raise OAuthError("invalid_client", "Assertion exp is more than five minutes away.", status=401)
    try:
        with transaction.atomic():
            SandboxAssertionJti.objects.create(client=client, jti=str(claims["jti"])[:200], expires_at=expires)
    except IntegrityError as exc:
        raise OAuthError("invalid_client", "Assertion jti was already used.", status=401) from exc


@transaction.atomic
def sandbox_token_for_client_credentials(
    *, client_assertion_type: str, client_assertion: str, scope: str, token_url: str, fhir_base: str
) -> dict[str, Any]:
    from .scopes import invalid_scopes, scopes_not_allowed

    if client_assertion_type != CLIENT_ASSERTION_TYPE or not client_assertion:
        raise OAuthError("invalid_client", "client_credentials needs a jwt-bearer client_assertion.", status=401)
    try:
        client_id = str(jwt.decode(client_assertion, options={"verify_signature": False}).get("iss", ""))
    except jwt.PyJWTError as exc:
        raise OAuthError("invalid_client", "The client assertion is not a JWT.", status=401) from exc
    client = SandboxClient.objects.filter(client_id=client_id).first()
    if client is None:
        raise OAuthError("invalid_client", "Unknown client.", status=401)
    _assertion_verify(client=client, assertion=client_assertion, token_url=token_url)
    requested = scope.split()
    if (
        not requested or invalid_scopes(requested) or scopes_not_allowed(requested, client.scopes)
        or any(not s.startswith("system/") for s in requested)
    ):
        raise OAuthError("invalid_scope", "Backend Services may request only registered system/ scopes.")
    return _token_response(grant=Grant(client=client, scope=" ".join(requested)), fhir_base=fhir_base)

