"""POST /api/transcripts: per-platform bearer tokens, revocation, rate limiting, stored-first semantics."""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from reconcile_app.audit.models import AuditEvent
from reconcile_app.transcripts.models import Upload
from reconcile_app.transcripts.services import platform_create, platform_enrol, platform_revoke

from .conftest import transcript_bytes

URL = "/api/transcripts"


def enrolled_token(name: str, patient) -> str:  # type: ignore[no-untyped-def]
    """A platform's token, the platform enrolled for the patient (a platform files only for those)."""
    platform, token = platform_create(name=name)
    platform_enrol(platform=platform, patient=patient)
    return token


@pytest.fixture
def token(patient) -> str:  # type: ignore[no-untyped-def]
    cache.clear()
    return enrolled_token("WellCoach", patient)


def _post(client, token: str, body: bytes, **headers):  # type: ignore[no-untyped-def]
    return client.post(URL, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **headers)


def test_the_url_is_the_documented_one():
    assert reverse("api:transcript_create") == URL


def test_a_platform_posts_a_transcript_and_reads_its_status(client, patient, token, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        response = _post(client, token, transcript_bytes(sessions=2))
    assert response.status_code == 202
    body = response.json()
    upload = Upload.objects.get(pk=body["upload"])
    assert upload.platform.name == "WellCoach" and upload.source == "api" and upload.patient == patient
    assert body["summary"]["added"] == ["s01", "s02"]
    status = client.get(response["Location"], HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert [s["id"] for s in status["sessions"]] == ["s01", "s02"]


def test_without_a_valid_token_nothing_is_stored_and_the_denial_is_audited(client, patient, token):
    assert client.post(URL, data=b"{}", content_type="application/json").status_code == 401
    assert _post(client, "rct_wrong", transcript_bytes()).status_code == 401
    assert Upload.objects.count() == 0
    # Anonymous refusals are one row per window and reason, counting the requests.
    denial = AuditEvent.objects.get(action="api.transcript", outcome="denied")
    assert denial.count == 2 and denial.details == {"reason": "bad_token"} and denial.actor_label == "anonymous"


def test_a_revoked_token_stops_working(client, patient, token):
    from reconcile_app.transcripts.models import CoachingPlatform

    platform_revoke(platform_id=CoachingPlatform.objects.get().pk)
    assert _post(client, token, transcript_bytes()).status_code == 401


def test_an_invalid_transcript_is_stored_and_answered_with_its_errors(client, patient, token):
    response = _post(client, token, b'{"format": "coaching-transcript/v1", "sessions": []}')
    assert response.status_code == 422
    assert response.json()["errors"] == ["sessions must be a non-empty list"]
    assert Upload.objects.get().status == Upload.Status.INVALID


def test_an_oversized_body_is_refused_unread_but_recorded(client, patient, token, settings):
    settings.TRANSCRIPT_MAX_BYTES = 50
    response = _post(client, token, transcript_bytes())
    assert response.status_code == 413
    upload = Upload.objects.get()
    assert upload.size > 50 and bytes(upload.raw) == b""


def test_each_platform_is_rate_limited_on_its_own(client, patient, token, settings, django_capture_on_commit_callbacks):
    settings.TRANSCRIPT_API_RATE_LIMIT = 2
    other = enrolled_token("OtherCoach", patient)
    with django_capture_on_commit_callbacks():
        codes = [_post(client, token, transcript_bytes()).status_code for _ in range(3)]
        other_code = _post(client, other, transcript_bytes()).status_code
    assert codes == [202, 202, 429] and other_code == 202
    assert int(_post(client, token, transcript_bytes())["Retry-After"]) >= 1


def test_a_platform_cannot_read_another_platforms_upload(client, patient, token, django_capture_on_commit_callbacks):
    _, other = platform_create(name="OtherCoach")
    with django_capture_on_commit_callbacks():
        location = _post(client, token, transcript_bytes())["Location"]
    assert client.get(location, HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 404


def test_a_body_above_djangos_form_limit_but_within_ours_is_accepted(client, patient, token, settings, django_capture_on_commit_callbacks):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000  # Django's limit for form bodies must not apply to the raw API body
    raw = transcript_bytes(sessions=1, texts={"s01": "walked " * 500})
    with django_capture_on_commit_callbacks():
        response = _post(client, token, raw)
    assert response.status_code == 202 and bytes(Upload.objects.get().raw) == raw
