"""Times in the viewer's zone with the zone named: detected from the browser, settable per user."""
from __future__ import annotations

import zoneinfo
from datetime import datetime, timezone as dt_timezone

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import timezone

from reconcile_app.core.models import UserPreference
from reconcile_app.core.timezones import local_text, offset_text

TURN = datetime(2026, 1, 5, 15, 4, tzinfo=dt_timezone.utc)  # said at 10:04 in New York (−05:00)


def test_a_time_is_written_with_its_zone():
    assert local_text(TURN.astimezone(zoneinfo.ZoneInfo("America/New_York"))) == "2026-01-05 10:04 EST"
    assert local_text(TURN.astimezone(zoneinfo.ZoneInfo("America/Sao_Paulo"))) == "2026-01-05 12:04 UTC\u221203:00"
    assert local_text(TURN) == "2026-01-05 15:04 UTC"
    assert offset_text(None) == "UTC"


def test_the_when_filter_renders_the_active_zone_and_keeps_utc_in_the_markup():
    template = Template("{% load reconcile_time %}{{ at|when }}|{{ at|when_text }}")
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):
        html = template.render(Context({"at": TURN}))
    assert '<time datetime="2026-01-05T15:04:00+00:00" title="America/New_York, UTC\u221205:00">2026-01-05 10:04 EST</time>' in html
    assert html.endswith("|2026-01-05 10:04 EST")
    assert Template("{% load reconcile_time %}[{{ at|when }}]").render(Context({"at": None})) == "[]"


@pytest.mark.django_db
def test_the_browser_reports_its_zone_once_and_pages_follow_it(nurse_client, nurse):
    response = nurse_client.post(reverse("core:timezone_detect"), {"tz": "America/New_York"})
    assert response.json() == {"changed": True, "tz": "America/New_York"}
    pref = UserPreference.objects.get(user=nurse)
    assert (pref.time_zone, pref.time_zone_source) == ("America/New_York", "browser")
    page = nurse_client.get(reverse("core:preferences"))
    assert page.wsgi_request.tz_name == "America/New_York"
    assert 'data-tz="America/New_York"' in page.content.decode() and 'data-tz-auto="1"' in page.content.decode()
    assert nurse_client.post(reverse("core:timezone_detect"), {"tz": "America/New_York"}).json()["changed"] is False


@pytest.mark.django_db
def test_a_zone_the_user_chose_is_never_replaced_by_detection(nurse_client, nurse):
    response = nurse_client.post(reverse("core:preferences"), {"time_zone": "Europe/Paris"}, follow=True)
    assert "Times now show in Europe/Paris." in response.content.decode()
    assert 'data-tz-auto=""' in response.content.decode()
    nurse_client.post(reverse("core:timezone_detect"), {"tz": "America/Chicago"})
    assert UserPreference.objects.get(user=nurse).time_zone == "Europe/Paris"
    nurse_client.post(reverse("core:preferences"), {"time_zone": ""})
    assert UserPreference.objects.get(user=nurse).time_zone == ""  # back to automatic
    nurse_client.post(reverse("core:timezone_detect"), {"tz": "America/Chicago"})
    assert UserPreference.objects.get(user=nurse).time_zone == "America/Chicago"


@pytest.mark.django_db
def test_unknown_zones_are_refused(nurse_client, nurse):
    assert nurse_client.post(reverse("core:timezone_detect"), {"tz": "Mars/Olympus"}).status_code == 400
    page = nurse_client.post(reverse("core:preferences"), {"time_zone": "Mars/Olympus"})
    assert page.status_code == 200 and page.context["form"].errors
    assert not UserPreference.objects.filter(user=nurse).exclude(time_zone="").exists()


@pytest.mark.django_db
def test_detection_needs_a_login(client):
    assert client.post(reverse("core:timezone_detect"), {"tz": "America/New_York"}).status_code == 302
