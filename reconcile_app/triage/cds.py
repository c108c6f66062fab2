"""CDS Hooks: the CDS client's JWT check and the patient-view cards (one per open safety-critical finding)."""
from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlsplit

import jwt
from django.conf import settings
from django.urls import NoReverseMatch, reverse

from reconcile_app.core.exceptions import PermanentError
from reconcile_app.smart.models import EhrRegistration

from .models import OPEN_STATUSES, TriageItem

SERVICE_ID = "reconcile-patient-view"
ALGORITHMS = ["RS384", "ES384", "RS256", "ES256"]


class CdsAuthError(PermanentError):
    pass


def discovery() -> dict[str, Any]:
    return {
        "services": [
            {
                "hook": "patient-view",
                "id": SERVICE_ID,
                "title": "Patient-reported discrepancies",
                "description": "Open safety-critical discrepancies between what the patient told their coach and the record.",
                "prefetch": {},
            }
        ]
    }


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.netloc) == (pb.scheme, pb.netloc)


def cds_client_verify(*, authorization: str, audiences: list[str]) -> EhrRegistration | None:
    """Verify the CDS client's bearer JWT against its EHR registration's JWKS. None when
    CDS_HOOKS_REQUIRE_JWT is off (the embedded demo) and no token was sent."""
    token = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
    if not token:
        if getattr(settings, "CDS_HOOKS_REQUIRE_JWT", True):
            raise CdsAuthError("a bearer JWT is required")
        return None
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise CdsAuthError("malformed JWT") from exc
    issuer = str(claims.get("iss") or "").rstrip("/")
    registration = EhrRegistration.objects.filter(active=True, iss=issuer).first()
    if registration is None:
        raise CdsAuthError("unknown CDS client")
    jwks_url = str(header.get("jku") or "")
    if jwks_url and not _same_origin(jwks_url, registration.iss):
        raise CdsAuthError("jku is not on the EHR's origin")
    jwks_url = jwks_url or str((registration.discovery or {}).get("jwks_uri") or "") or registration.jwks_url
    if not jwks_url:
        raise CdsAuthError("no JWKS known for this CDS client")
    from reconcile_app.smart.client import jwks_fetch

    keys = jwt.PyJWKSet.from_dict(jwks_fetch(url=jwks_url)).keys
    kid = header.get("kid")
    candidates = [k for k in keys if kid is None or k.key_id == kid]
    for key in candidates:
        try:
            jwt.decode(token, key=key.key, algorithms=ALGORITHMS, audience=audiences, issuer=issuer or None,
                       options={"require": ["exp", "iss", "aud", "jti"]})
            return registration
        except jwt.PyJWTError:
            continue
    raise CdsAuthError("JWT signature or claims rejected")


def _launch_url() -> str:
    try:
        path = reverse("smart:launch")
    except NoReverseMatch:
        path = "/smart/launch"
    return settings.PUBLIC_BASE_URL.rstrip("/") + path


def patient_view_cards(*, patient_fhir_id: str, registration: EhrRegistration | None, fhir_server: str = "") -> list[dict[str, Any]]:
    """Cards carry ids and categories only: the reviewer reads the details inside the app."""
    items = TriageItem.objects.filter(patient__fhir_id=patient_fhir_id, safety_critical=True, status__in=OPEN_STATUSES)
    if registration is not None:
        items = items.filter(patient__registration=registration)
    elif fhir_server:
        items = items.filter(patient__registration__iss=fhir_server.rstrip("/"))
    cards = []
    for item in items.order_by("band", "created_at", "id")[:20]:
        cards.append({
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"reconcile:finding:{item.finding_id}")),
            "summary": f"Safety-critical {item.kind}: patient report vs record ({item.category or 'uncategorized'})"[:140],
            "detail": f"Severity {item.severity}. Review finding #{item.finding_id} in reconcile.",
            "indicator": "critical",
            "source": {"label": "reconcile", "url": settings.PUBLIC_BASE_URL},
            "links": [{
                "label": "Review in reconcile",
                "url": _launch_url(),
                "type": "smart",
                "appContext": json.dumps({"finding": item.finding_id}),
            }],
        })
    return cards
