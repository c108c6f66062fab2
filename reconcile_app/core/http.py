"""Typed request for views: htmx details and the SMART launch bound to the session."""
from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class AppHttpRequest(HttpRequest):
    htmx: HtmxDetails
    request_id: str
    user: User  # type: ignore[assignment]
