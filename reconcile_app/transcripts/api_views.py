"""REST endpoint for coaching platforms: POST a transcript with a bearer token; GET its status."""
from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from reconcile_app.audit.services import audit_record
from reconcile_app.core.cache import CacheUnavailable, cache_available

from . import services
from .models import CoachingPlatform, Upload
from .selectors import platform_for_token

CONTENT_TYPE_NAMES = {"application/json": "transcript.json", "text/csv": "transcript.csv", "text/plain": "transcript.txt"}


def _platform(request: HttpRequest) -> CoachingPlatform | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return platform_for_token(token=token.strip()) if scheme.lower() == "bearer" else None


def _rate_limited(platform: CoachingPlatform) -> int:
    """Fixed window per platform; returns seconds to wait (0 = allowed). Counted in the shared cache,
    or, when the cache cannot count (Redis down), from the platform's stored uploads: the upload being
    answered is already stored, so it is part of either count."""
    limit = int(getattr(settings, "TRANSCRIPT_API_RATE_LIMIT", 60))
    window = int(getattr(settings, "TRANSCRIPT_API_RATE_WINDOW_SECONDS", 60))
    now = int(time.time())
    count: int | None = None
    if cache_available():
        key = f"transcripts:api-rate:{platform.pk}:{now // window}"
        try:
            cache.add(key, 0, timeout=window + 5)
            count = cache.incr(key)
        except CacheUnavailable:
            count = None
        except ValueError:  # the key expired between add and incr
            cache.set(key, 1, timeout=window + 5)
            count = 1
    if count is None:
        since = timezone.now() - timedelta(seconds=window)
        count = Upload.objects.filter(platform=platform, source=Upload.Source.API, created_at__gte=since).count()
        return 0 if count <= limit else window
    return 0 if count <= limit else window - now % window or 1


def _read_body(request: HttpRequest, limit: int) -> tuple[bytes, int]:
    """At most limit + 1 bytes of the body, and its size as far as known. A chunked body has no
    Content-Length, and Django then reads nothing (its stream is limited to 0): read the server's
    decoded input stream itself, to its end or one byte past the limit."""
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared or "chunked" not in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        return (request.read(limit + 1) if declared <= limit else b""), declared
    stream = request.META["wsgi.input"]
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(64 * 1024, limit + 1 - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    raw = b"".join(parts)
    return (raw if size <= limit else b""), size


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
    """Upload first: the bytes are stored (database only) before any cache or broker is touched, so a
    Redis outage can neither lose an upload nor turn it into a 500. Then the rate limit, then the import."""
    platform = _platform(request)
    if platform is None:
        return _denied(request, "bad_token")
    limit = services.max_upload_bytes()
    raw, size = _read_body(request, limit)
    upload = services.upload_receive(raw=raw, filename=_filename(request), source=Upload.Source.API, platform=platform, total_size=size)
    wait = _rate_limited(platform)
    if wait:
        services.upload_refuse(upload_id=upload.pk, reason=f"over the limit of uploads per window; retry after {wait} s",
                               rejection="too many uploads: stored, not imported")
        audit_record(request=request, action="api.transcript", outcome="denied", object_type="upload", object_id=upload.pk,
                     details={"reason": "rate_limited", "platform": platform.pk})
        response = JsonResponse({"error": "too many requests", "upload": upload.pk}, status=429)
        response["Retry-After"] = str(wait)
        return response
    upload = services.upload_import(upload_id=upload.pk)
    status = {Upload.Status.INVALID: 422 if upload.size <= limit else 413, Upload.Status.FAILED: 500}.get(upload.status, 202)
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
