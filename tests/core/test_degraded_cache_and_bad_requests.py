"""A cache outage degrades, never 500s; requests refused before a user is read get a plain 400."""
from __future__ import annotations

import pytest
from django.core.cache import cache

from reconcile_app.core import cache as core_cache
from reconcile_app.core.cache import CacheUnavailable, cache_available

pytestmark = pytest.mark.django_db

# Nothing listens on port 1: every operation fails to connect at once.
DOWN = {"default": {"BACKEND": "reconcile_app.core.cache.ResilientRedisCache", "LOCATION": "redis://127.0.0.1:1/0",
                    "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}


@pytest.fixture
def cache_down(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.CACHES = DOWN
    monkeypatch.setattr(core_cache, "_last_failure", 0.0)
    yield
    monkeypatch.setattr(core_cache, "_last_failure", 0.0)


def test_an_unreachable_redis_reads_as_a_miss_and_counters_say_they_cannot_count(cache_down):
    assert cache_available()
    assert cache.get("k", "default") == "default"
    cache.set("k", 1)  # dropped, no exception
    assert cache.add("k", 1) is False and cache.get_or_set("k", 5) == 5
    with pytest.raises(CacheUnavailable):
        cache.incr("k")
    with pytest.raises(ValueError):  # what code written for a missing key already handles
        cache.incr("k")
    assert not cache_available()


def test_the_queue_answers_with_counts_hidden_while_the_cache_is_down(nurse_client, cache_down):
    first = nurse_client.get("/triage/")  # the first request meets the outage
    assert first.status_code == 200
    response = nurse_client.get("/triage/")
    assert response.status_code == 200
    assert b"Counts are unavailable for a moment" in response.content and response.context["counts"] is None


def test_a_claim_still_works_while_the_cache_is_down(nurse_client, nurse, cache_down):
    from tests.triage.factories import item_create

    item = item_create()
    response = nurse_client.post(f"/triage/findings/{item.finding_id}/claim/")
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.assignee == nurse


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1:8000.evil", "xn--bad..host"])
def test_an_unknown_host_is_a_plain_400(client, host):
    response = client.get("/", HTTP_HOST=host)
    assert response.status_code == 400
    assert b"Bad request" in response.content and b"Traceback" not in response.content


@pytest.mark.parametrize("query", [
    "after=1.99999999999999999999.5",           # a moment past the year 9999
    "sort=oldest&after=99999999999999999999.5",
    "after=1.5.99999999999999999999",            # an id past 64 bits
    "after=1.5.0",
    "after=abc",
])
def test_a_malformed_queue_cursor_is_a_400(nurse_client, query):
    response = nurse_client.get(f"/triage/?{query}")
    assert response.status_code == 400


def test_a_well_formed_cursor_still_pages(nurse_client):
    assert nurse_client.get("/triage/?after=1.1700000000000000.5").status_code == 200
