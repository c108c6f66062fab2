"""Outbound HTTP of triage: FHIR creates for write-back, updates and deletes for retraction, and the
coaching platform's webhook."""
from __future__ import annotations

import json
from typing import Any

import requests
from django.conf import settings

from reconcile_app.core.exceptions import PermanentError, RetryableError

FHIR_JSON = "application/fhir+json"


class ResourceNotSupported(PermanentError):
    """The server does not take this resource type: the caller may fall back to another."""


class ResourceGone(PermanentError):
    """The resource is not (or no longer) on the server: 404 or 410."""


class VersionConflict(RetryableError):
    """The resource changed since it was read (412 on If-Match): read it again and retry."""


def _timeout() -> float:
    return float(getattr(settings, "SMART_HTTP_TIMEOUT_SECONDS", 15))


def _looks_unsupported(response: requests.Response) -> bool:
    if response.status_code in (404, 405, 501):
        return True
    if response.status_code in (400, 422):
        text = response.text[:2000].lower()
        return any(s in text for s in ("not supported", "unsupported", "unknown resource type", "invalid resource type"))
    return False


def fhir_resource_create(*, base_url: str, bearer: str | None, resource: dict[str, Any]) -> dict[str, Any]:
    """POST a resource and return what the server stored (body, or the id from Location)."""
    rtype = resource.get("resourceType", "")
    url = base_url.rstrip("/") + "/" + rtype
    headers = {"Content-Type": FHIR_JSON, "Accept": FHIR_JSON, "Prefer": "return=representation"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        response = requests.post(url, data=json.dumps(resource).encode("utf-8"), headers=headers, timeout=_timeout(), allow_redirects=False)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise RetryableError(f"FHIR server unreachable ({exc.__class__.__name__})") from exc
    if response.status_code == 429 or (response.status_code >= 500 and response.status_code != 501):
        raise RetryableError(f"FHIR server answered {response.status_code} to {rtype} create")
    if _looks_unsupported(response):
        raise ResourceNotSupported(f"FHIR server does not accept {rtype} ({response.status_code})")
    if response.status_code in (401, 403):
        raise PermanentError(f"FHIR server refused {rtype} create ({response.status_code}): no write grant")
    if not 200 <= response.status_code < 300:
        raise PermanentError(f"FHIR server rejected {rtype} ({response.status_code})")
    body: dict[str, Any] = {}
    if response.content:
        try:
            parsed = response.json()
            body = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            body = {}
    if not body.get("id"):
        # Servers that ignore `Prefer` answer with Location: <base>/<type>/<id>/_history/<v>.
        parts = response.headers.get("Location", "").split("/")
        if rtype in parts and parts.index(rtype) + 1 < len(parts):
            body = {**body, "resourceType": rtype, "id": parts[parts.index(rtype) + 1]}
    if not body.get("id"):
        raise PermanentError(f"FHIR server returned no id for the created {rtype}")
    return body


def fhir_resource_read(*, base_url: str, bearer: str | None, resource_type: str, resource_id: str) -> dict[str, Any]:
    headers = {"Accept": FHIR_JSON}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        response = requests.get(f"{base_url.rstrip('/')}/{resource_type}/{resource_id}", headers=headers, timeout=_timeout())
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise RetryableError(f"FHIR server unreachable ({exc.__class__.__name__})") from exc
    if response.status_code >= 500 or response.status_code == 429:
        raise RetryableError(f"FHIR server answered {response.status_code}")
    if response.status_code in (404, 410):
        raise ResourceGone(f"FHIR read answered {response.status_code}")
    if response.status_code != 200:
        raise PermanentError(f"FHIR read answered {response.status_code}")
    return response.json()


def _write_answer(response: requests.Response, what: str) -> None:
    """Shared verdict on an update or delete answer: retry, fall back, give up, or fine."""
    if response.status_code == 429 or (response.status_code >= 500 and response.status_code != 501):
        raise RetryableError(f"FHIR server answered {response.status_code} to {what}")
    if response.status_code == 412:
        raise VersionConflict(f"FHIR server answered 412 to {what}: the resource changed meanwhile")
    if response.status_code in (404, 410):
        raise ResourceGone(f"FHIR server answered {response.status_code} to {what}")
    if response.status_code in (405, 501) or (response.status_code in (400, 422) and _looks_unsupported(response)):
        raise ResourceNotSupported(f"FHIR server does not allow {what} ({response.status_code})")
    if response.status_code in (401, 403):
        raise PermanentError(f"FHIR server refused {what} ({response.status_code}): no grant for it")
    if not 200 <= response.status_code < 300:
        raise PermanentError(f"FHIR server rejected {what} ({response.status_code})")


def fhir_resource_update(*, base_url: str, bearer: str | None, resource: dict[str, Any], if_match: str = "") -> None:
    """PUT a new version of a resource (If-Match on the version read, when known)."""
    rtype, rid = str(resource.get("resourceType", "")), str(resource.get("id", ""))
    headers = {"Content-Type": FHIR_JSON, "Accept": FHIR_JSON}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    if if_match:
        headers["If-Match"] = f'W/"{if_match}"'
    try:
        response = requests.put(f"{base_url.rstrip('/')}/{rtype}/{rid}", data=json.dumps(resource).encode("utf-8"),
                                headers=headers, timeout=_timeout(), allow_redirects=False)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise RetryableError(f"FHIR server unreachable ({exc.__class__.__name__})") from exc
    _write_answer(response, f"{rtype} update")


def fhir_resource_delete(*, base_url: str, bearer: str | None, resource_type: str, resource_id: str) -> None:
    headers = {"Accept": FHIR_JSON}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        response = requests.delete(f"{base_url.rstrip('/')}/{resource_type}/{resource_id}", headers=headers,
                                   timeout=_timeout(), allow_redirects=False)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise RetryableError(f"FHIR server unreachable ({exc.__class__.__name__})") from exc
    _write_answer(response, f"{resource_type} delete")


def clarification_post(*, url: str, payload: dict[str, Any]) -> None:
    """Deliver a clarification request to a coaching platform's webhook."""
    if not url.startswith(("https://", "http://")):
        raise PermanentError("coaching platform webhook URL is not http(s)")
    try:
        response = requests.post(url, json=payload, timeout=_timeout(), allow_redirects=False)
    except (requests.ConnectionError, requests.Timeout) as exc:
        raise RetryableError(f"coaching platform unreachable ({exc.__class__.__name__})") from exc
    if response.status_code == 429 or response.status_code >= 500:
        raise RetryableError(f"coaching platform answered {response.status_code}")
    if not 200 <= response.status_code < 300:
        raise PermanentError(f"coaching platform refused the request ({response.status_code})")
