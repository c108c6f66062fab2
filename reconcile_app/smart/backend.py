"""Backend Services: client_credentials with a private_key_jwt we sign (RS384 or ES384), for work without a user."""
from __future__ import annotations

import secrets
import time
from datetime import timedelta

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.db import transaction
from django.utils import timezone

from . import client
from .exceptions import EhrProtocolError, LaunchRefused
from .models import EhrRegistration, SmartLaunch

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# Reuse a cached token only while it has this much life left.
TOKEN_MARGIN = timedelta(seconds=60)


def signing_algorithm(private_key_pem: str) -> str:
    """RS384 for RSA keys, ES384 for EC keys: the two SMART Backend Services requires servers to accept."""
    try:
        key = load_pem_private_key(private_key_pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise LaunchRefused("The registration's private key cannot be read.", code="bad_private_key") from exc
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS384"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return "ES384"
    raise LaunchRefused("Only RSA and EC private keys are supported.", code="bad_private_key")


def client_assertion_create(*, client_id: str, private_key_pem: str, key_id: str, token_endpoint: str) -> str:
    """A short-lived signed JWT that authenticates us at the token endpoint (SMART private_key_jwt)."""
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": token_endpoint, "iat": now, "exp": now + 300,
              "jti": secrets.token_urlsafe(24)}
    headers = {"typ": "JWT"}
    if key_id:
        headers["kid"] = key_id
    return jwt.encode(claims, private_key_pem, algorithm=signing_algorithm(private_key_pem), headers=headers)


def registration_assertion(*, registration: EhrRegistration, client_id: str | None = None) -> str:
    token_endpoint = (registration.discovery or {}).get("token_endpoint", "")
    if not registration.private_key_pem or not token_endpoint:
        raise LaunchRefused("The registration has no private key or token endpoint.", code="not_confidential")
    return client_assertion_create(
        client_id=client_id or registration.client_id,
        private_key_pem=registration.private_key_pem,
        key_id=registration.key_id,
        token_endpoint=token_endpoint,
    )


def backend_token_get(*, registration: EhrRegistration, force: bool = False) -> tuple[SmartLaunch, str]:
    """A system token for this EHR: the cached one while it lives, else a new client_credentials grant.

    The token sits encrypted in a BACKEND SmartLaunch row like any user token.
    """
    if not registration.backend_client_id or not registration.private_key_pem:
        raise LaunchRefused("Backend Services is not configured for this EHR.", code="backend_not_configured")
    cached = (
        SmartLaunch.objects.filter(registration=registration, kind=SmartLaunch.Kind.BACKEND, status=SmartLaunch.Status.ACTIVE)
        .order_by("-created_at")
        .first()
    )
    if (
        not force and cached is not None and cached.expires_at and cached.expires_at > timezone.now() + TOKEN_MARGIN
        and (cached.client_state or {}).get("access_token")
    ):
        return cached, cached.client_state["access_token"]
    if not (registration.discovery or {}).get("token_endpoint"):
        from .services import registration_discover

        registration_discover(registration=registration)
    token_endpoint = registration.discovery["token_endpoint"]
    body = client.token_request(
        token_endpoint=token_endpoint,
        data={
            "grant_type": "client_credentials",
            "scope": registration.backend_scopes or "system/*.rs",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": registration_assertion(registration=registration, client_id=registration.backend_client_id),
        },
    )
    try:
        expires_in = int(body.get("expires_in") or 300)
    except (TypeError, ValueError) as exc:
        raise EhrProtocolError("The token response has an invalid expires_in.") from exc
    with transaction.atomic():
        SmartLaunch.objects.filter(registration=registration, kind=SmartLaunch.Kind.BACKEND, status=SmartLaunch.Status.ACTIVE).update(
            status=SmartLaunch.Status.EXPIRED
        )
        launch = SmartLaunch.objects.create(
            registration=registration,
            kind=SmartLaunch.Kind.BACKEND,
            status=SmartLaunch.Status.ACTIVE,
            need_patient_banner=False,
            scopes_granted=str(body.get("scope") or "")[:800],
            client_state={"access_token": body["access_token"], "token_type": str(body.get("token_type") or "")},
            expires_at=timezone.now() + timedelta(seconds=expires_in),
        )
    return launch, body["access_token"]


def registration_public_jwk(*, registration: EhrRegistration) -> dict | None:
    """The public half of the registration's key as a JWK (kid, alg, use), or None without a usable key."""
    import json

    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    if not registration.private_key_pem:
        return None
    try:
        public = load_pem_private_key(registration.private_key_pem.encode(), password=None).public_key()
    except (ValueError, TypeError):
        return None
    is_rsa = isinstance(public, rsa.RSAPublicKey)
    jwk = json.loads((RSAAlgorithm if is_rsa else ECAlgorithm).to_jwk(public))
    jwk.update({"kid": registration.key_id or f"reg-{registration.pk}", "use": "sig", "alg": "RS384" if is_rsa else "ES384"})
    return jwk


def registration_key_generate(*, registration: EhrRegistration) -> dict:
    """Give the registration a fresh RSA key (RS384) and return the public JWK to register with the EHR.

    The private half is stored encrypted and never leaves the server; the public JWK is also
    published at /smart/jwks for EHRs that fetch keys by URL.
    """
    from cryptography.hazmat.primitives import serialization

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    registration.private_key_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    registration.key_id = secrets.token_hex(8)
    registration.save(update_fields=["private_key_pem", "key_id", "updated_at"])
    jwk = registration_public_jwk(registration=registration)
    assert jwk is not None  # just generated
    return jwk
