"""CSP frame-ancestors from the EHR registrations: the app may be framed by the EHRs it serves."""
from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .selectors import registration_frame_ancestors


_CACHE_SECONDS = 30.0
_cache: tuple[float, list[str]] = (0.0, [])


def frame_ancestors() -> list[str]:
    """Origins allowed to frame the app: the registered EHRs (plus ourselves).

    Cached briefly per process: every response needs it, registrations change rarely.
    """
    global _cache
    now = time.monotonic()
    if now - _cache[0] > _CACHE_SECONDS:
        _cache = (now, ["'self'", *registration_frame_ancestors()])
    return _cache[1]


class FrameAncestorsMiddleware:
    """CSP frame-ancestors from the EHR registrations replaces the blunt X-Frame-Options."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            ancestors = " ".join(frame_ancestors())
            response["Content-Security-Policy"] = (
                "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                f"script-src 'self'; frame-ancestors {ancestors}"
            )
        if "X-Frame-Options" in response:
            del response["X-Frame-Options"]
        return response
