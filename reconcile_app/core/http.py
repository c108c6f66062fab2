"""Typed request for views, and the client's address as far as it can be trusted."""
from __future__ import annotations

import ipaddress

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AppHttpRequest(HttpRequest):
    htmx: HtmxDetails
    request_id: str
    user: User  # type: ignore[assignment]


def client_address(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or with TRUSTED_PROXY_COUNT proxies in front the address the outermost of them saw
    (X-Forwarded-For read from the right: entries left of the proxies' own are the client's to forge).
    Used by the audit trail and by sign-in throttling, so both count the same address."""
    remote = request.META.get("REMOTE_ADDR") or None
    proxies = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if proxies <= 0:
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    if len(hops) < proxies:
        return remote
    candidate = hops[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote
