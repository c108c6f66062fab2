"""REST endpoint for coaching platforms: POST a transcript with a bearer token; GET its status."""
from __future__ import annotations

import os
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from reconcile_app.audit.services import audit_record

from . import services
from .models import CoachingPlatform, Upload
from .selectors import platform_for_token

CONTENT_TYPE_NAMES = {"application/json": "transcript.json", "text/csv": "transcript.csv", "text/plain": "transcript.txt"}


def _platform(request: HttpRequest) -> CoachingPlatform | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return platform_for_token(token=token.strip()) if scheme.lower() == "bearer" else None


def _rate_limited(platform: CoachingPlatform) -> int:
    """Fixed-window counter in Django's cache, per platform; returns seconds to wait (0 = allowed)."""
    limit = int(getattr(settings, "TRANSCRIPT_API_RATE_LIMIT", 60))
    window = int(getattr(settings, "TRANSCRIPT_API_RATE_WINDOW_SECONDS", 60))
    now = int(time.time())
    key = f"transcripts:api-rate:{platform.pk}:{now // window}"
    cache.add(key, 0, timeout=window + 5)
    try:
        count = cache.incr(key)
    except ValueError:  # the key expired between add and incr
        cache.set(key, 1, timeout=window + 5)
        count = 1
    return 0 if count <= limit else window - now % window or 1


def _denied(request: HttpRequest, reason: str) -> JsonResponse:
    audit_record(request=request, action="api.transcript", outcome="denied", details={"reason": reason})
    response = JsonResponse({"error": "a valid platform token is required"}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="reconcile"'
    return response


def _body(upload: Upload) -> dict[str, Any]:
    return {"upload": upload.pk, "status": upload.status, "sha256": upload.sha256, "rejection": upload.rejection, "errors": upload.errors,
            "summary": {k: v for k, v in (upload.summary or {}).items() if k != "sessions"}}


def _filename(request: HttpRequest) -> str:
    given = os.path.basename(request.headers.get("X-Filename", "").strip())
    if given and given.isprintable() and len(given) <= 255:
        return given
    return CONTENT_TYPE_NAMES.get(request.content_type or "", "transcript")


@csrf_exempt  # bearer-token API: no cookies, so no CSRF exposure
@require_POST
def transcript_create(request: HttpRequest) -> JsonResponse:
    platform = _platform(request)
    if platform is None:
        return _denied(request, "bad_token")
    wait = _rate_limited(platform)
    if wait:
        audit_record(request=request, action="api.transcript", outcome="denied", details={"reason": "rate_limited", "platform": platform.pk})
        response = JsonResponse({"error": "too many requests"}, status=429)
        response["Retry-After"] = str(wait)
        return response
    limit = services.max_upload_bytes()
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    # Never read more than one byte past the limit; the oversized upload is still recorded.
    raw = request.read(limit + 1) if declared <= limit else b""
    upload = services.upload_receive(raw=raw, filename=_filename(request), source=Upload.Source.API, platform=platform, total_size=declared)
    upload = services.upload_import(upload_id=upload.pk)
    status = {Upload.Status.INVALID: 422 if upload.size <= limit else 413}.get(upload.status, 202)
    response = JsonResponse(_body(upload), status=status)
    response["Location"] = reverse("api:transcript_status", args=[upload.pk])
    return response


@require_GET
def transcript_status(request: HttpRequest, pk: int) -> JsonResponse:
    platform = _platform(request)
    if platform is None:
        return _denied(request, "bad_token")
    upload = Upload.objects.filter(pk=pk, platform=platform).defer("raw").first()
    if upload is None:  # another platform's upload looks the same as none
        return JsonResponse({"error": "not found"}, status=404)
    body = _body(upload)
    body["sessions"] = [{"id": s.external_id, "pipeline_status": s.pipeline_status} for s in upload.sessions.order_by("started_at")]
    return JsonResponse(body)
