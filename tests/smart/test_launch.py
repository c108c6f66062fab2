"""EHR and standalone launches through fhirclient against the sandbox EHR, over real HTTP."""
from __future__ import annotations

import logging
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.models import Patient, RecordPull
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.services import launch_access_token
from tests.smart.sandbox_env import OTHER_PATIENT, PATIENT, ehr_launch_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def _launch(browser, live_server, **kwargs):  # type: ignore[no-untyped-def]
    return browser.get(ehr_launch_url(live_server, **kwargs), timeout=60)


def test_ehr_launch_signs_in_pulls_the_record_and_shows_the_patient(browser, live_server, sandbox_ehr, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    response = _launch(browser, live_server)

    assert response.status_code == 200
    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR)
    patient = Patient.objects.get(fhir_id=PATIENT, registration=sandbox_ehr)
    # The clinician lands on the patient's findings; the record is one tab away.
    assert urlsplit(response.url).path == "/triage/patient/"
    assert f'href="/patients/{patient.pk}/"' in response.text
    assert launch.status == SmartLaunch.Status.ACTIVE
    assert launch.patient_fhir_id == PATIENT
    assert launch.fhir_user == "Practitioner/smart-prac-1"
    assert launch.user.groups.filter(name="clinician").exists()
    assert not launch.user.has_usable_password()
    assert launch.expires_at is not None
    # PKCE: fhirclient sent S256 and kept the verifier in the (encrypted) state.
    authorize = next(r for r in response.history if "/sandbox/auth/authorize" in r.url)
    query = parse_qs(urlsplit(authorize.url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["scope"][0].split()[0] == "launch"
    assert "patient/*.rs" in query["scope"][0].split()
    # The pull ran (eager Celery) and the page shows the safety context from it.
    pull = RecordPull.objects.get(patient=patient)
    assert pull.status == RecordPull.Status.OK and pull.resources > 10
    assert 'data-safety-context' in response.text
    assert "Penicillin" in response.text and "Metformin 500 mg tablet" in response.text
    assert "Warfarin" not in response.text  # entered-in-error
    assert "data-patient-banner" in response.text
    # Tokens: nowhere in logs, URLs or clear database columns.
    token = launch_access_token(launch)
    refresh = launch.client_state["server"]["auth"]["refresh_token"]
    assert token and refresh
    for secret in (token, refresh):
        assert secret not in caplog.text
        assert all(secret not in r.url for r in [*response.history, response])
        assert secret not in str(browser.cookies.get_dict())
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_state FROM smart_smartlaunch WHERE id = %s", [launch.pk])
        raw = cursor.fetchone()[0]
    assert raw.startswith("fernet:") and token not in raw
    assert AuditEvent.objects.filter(action="smart.callback", outcome="ok").exists()
    assert AuditEvent.objects.filter(action="record.pull", outcome="ok", patient_pk=patient.pk).exists()


def test_launch_from_the_sandbox_ehr_chart_iframe(browser, live_server, sandbox_ehr, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import html

    from reconcile_app.smart import middleware

    monkeypatch.setattr(middleware, "_cache", (0.0, []))  # a cached policy from an earlier test would hide ours

    chart = browser.get(f"{live_server.url}/sandbox/ehr/patients/{PATIENT}/?hide_banner=on", timeout=30)
    src = html.unescape(re.search(r'<iframe[^>]+src="([^"]+)"', chart.text).group(1))
    framed = browser.get(live_server.url + src if src.startswith("/") else src, timeout=60,
                         headers={"Sec-Fetch-Dest": "iframe"})
    assert framed.status_code == 200 and "data-safety-context" in framed.text
    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR)
    assert launch.need_patient_banner is False  # the EHR shows its own banner
    assert "data-patient-banner" not in framed.text
    assert "patient/DetectedIssue.cu" in launch.scopes_granted.split()  # write-back (and its retraction) enabled
    assert f"frame-ancestors 'self' {live_server.url}" in framed.headers["Content-Security-Policy"]


def test_standalone_launch_picks_a_patient_at_the_ehr(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    page = browser.get(f"{live_server.url}/smart/standalone/", timeout=30)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    picker = browser.post(page.url, data={"csrfmiddlewaretoken": csrf, "registration": sandbox_ehr.pk},
                          headers={"Referer": page.url}, timeout=30)
    assert "/sandbox/auth/authorize" in picker.url
    assert "launch/patient" in parse_qs(urlsplit(picker.url).query)["scope"][0].split()
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', picker.text))
    fields = {k: v.replace("&amp;", "&") for k, v in fields.items()}
    fields.update({"patient": OTHER_PATIENT, "practitioner": "smart-prac-1"})
    done = browser.post(picker.url.split("?")[0], data=fields, headers={"Referer": picker.url}, timeout=60)

    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.STANDALONE)
    assert launch.status == SmartLaunch.Status.ACTIVE and launch.patient_fhir_id == OTHER_PATIENT
    assert launch.need_patient_banner is True
    assert done.status_code == 200 and "No known allergies" in done.text


def test_replayed_callback_is_refused(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    response = _launch(browser, live_server)
    callback = next(r for r in response.history if "/smart/callback" in r.url)
    replay = browser.get(callback.url, timeout=30, allow_redirects=False)
    assert replay.status_code == 400
    assert 'data-launch-error="foreign_state"' in replay.text  # the state left the session when first used
    assert AuditEvent.objects.filter(action="smart.callback", outcome="denied", details__code="foreign_state").exists()


def test_callback_from_another_browser_is_refused(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    import requests

    start = browser.get(ehr_launch_url(live_server), timeout=30, allow_redirects=False)
    authorize = browser.get(start.headers["Location"], timeout=30, allow_redirects=False)
    callback_url = authorize.headers["Location"]
    cookieless = requests.get(callback_url, timeout=30, allow_redirects=False)
    assert cookieless.status_code == 400 and 'data-launch-error="cookies_blocked"' in cookieless.text
    attacker = requests.Session()
    attacker.get(ehr_launch_url(live_server), timeout=30, allow_redirects=False)  # a session of their own
    response = attacker.get(callback_url, timeout=30, allow_redirects=False)
    assert response.status_code == 400 and 'data-launch-error="foreign_state"' in response.text
    # The victim's own callback still works: the attacker did not burn it.
    ok = browser.get(callback_url, timeout=60)
    assert ok.status_code == 200 and SmartLaunch.objects.filter(status=SmartLaunch.Status.ACTIVE).count() == 1


def test_unregistered_iss_is_refused_without_contacting_it(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    response = browser.get(f"{live_server.url}/smart/launch", params={"iss": "https://evil.example/fhir", "launch": "x"},
                           timeout=30, allow_redirects=False)
    assert response.status_code == 400
    assert 'data-launch-error="unknown_iss"' in response.text
    assert "Location" not in response.headers
    assert not SmartLaunch.objects.exists()
    assert AuditEvent.objects.filter(action="smart.launch", outcome="denied", details__code="unknown_iss").exists()


@pytest.mark.parametrize(
    ("simulate", "code"),
    [
        ("auth_invalid_scope", "invalid_scope"),
        ("token_invalid_token", "invalid_grant"),
        ("token_expired_token", "invalid_grant"),
        ("request_invalid_token", "expired"),
        ("request_expired_token", "expired"),
    ],
)
def test_simulated_launch_errors_end_on_a_clear_audited_page(browser, live_server, sandbox_ehr, caplog, simulate, code) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    response = _launch(browser, live_server, simulate_error=simulate)
    assert response.status_code in (400, 401, 503)
    assert f'data-launch-error="{code}"' in response.text
    assert "Rivera" not in response.text and "Penicillin" not in response.text  # no PHI on the error page
    assert AuditEvent.objects.filter(outcome__in=["denied", "error"], details__code=code).exists()
    for launch in SmartLaunch.objects.filter(kind=SmartLaunch.Kind.EHR):
        assert launch.status in (SmartLaunch.Status.FAILED, SmartLaunch.Status.EXPIRED)
        assert launch.client_state is None  # nothing kept from a failed launch
    assert "access_token" not in caplog.text and "Bearer " not in caplog.text


@pytest.mark.parametrize("simulate", ["auth_invalid_client_id", "auth_invalid_redirect_uri"])
def test_untrusted_client_errors_stop_at_the_ehr(browser, live_server, sandbox_ehr, simulate) -> None:  # type: ignore[no-untyped-def]
    """The authorization server must not redirect to an untrusted client: its page is the clear end."""
    response = _launch(browser, live_server, simulate_error=simulate)
    assert response.status_code == 400 and "/sandbox/auth/authorize" in response.url
    launch = SmartLaunch.objects.get()
    assert launch.status == SmartLaunch.Status.PENDING and launch_access_token(launch) == ""
    assert AuditEvent.objects.filter(action="smart.launch", object_id=str(launch.pk)).exists()


def test_when_the_ehr_refuses_the_refresh_the_clinicians_access_ends_with_the_launch(browser, live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: the access token expired and the EHR refuses the refresh, so the launch has ended:
    the next page of the record is the launch-again page (401), not the record, and the clinician
    is signed out; the tokens are gone and the end is audited with the EHR's own error code."""
    from datetime import timedelta

    from django.utils import timezone

    response = _launch(browser, live_server, simulate_error="token_expired_refresh_token")
    assert response.status_code == 200
    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR)
    record_url = f"{live_server.url}/patients/{Patient.objects.get(fhir_id=PATIENT).pk}/"
    assert "Penicillin" in browser.get(record_url, timeout=30).text
    SmartLaunch.objects.filter(pk=launch.pk).update(expires_at=timezone.now() - timedelta(seconds=5))
    page = browser.get(record_url, timeout=30)
    assert page.status_code == 401 and 'data-launch-error="expired"' in page.text
    assert "Penicillin" not in page.text
    launch.refresh_from_db()
    assert launch.status == SmartLaunch.Status.EXPIRED and launch.client_state is None
    assert launch.error_code == "invalid_grant"  # as the sandbox EHR sent it
    ended = AuditEvent.objects.get(action="smart.launch.ended")
    assert ended.details == {"reason": "invalid_grant", "signed_out": True}
    again = browser.get(record_url, timeout=30, allow_redirects=False)
    assert again.status_code == 302 and "/login/" in again.headers["Location"]  # signed out


def test_a_clinician_without_a_name_claim_is_named_from_the_fhir_user_resource(browser, live_server, sandbox_ehr, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # An EHR whose id_token carries fhirUser but no OpenID `name` (the sandbox sends one by default).
    monkeypatch.setattr("reconcile_app.sandbox.services.human_name", lambda resource: "")
    response = _launch(browser, live_server)
    assert response.status_code == 200
    launch = SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR)
    assert launch.user.get_full_name() == "William Osler"  # read from Practitioner/smart-prac-1
    assert "William Osler" in response.text and "smart-" not in response.text.split("<main", 1)[0]


def test_an_unreadable_fhir_user_leaves_the_sign_in_working(browser, live_server, sandbox_ehr, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.sandbox.models import SandboxResource

    monkeypatch.setattr("reconcile_app.sandbox.services.human_name", lambda resource: "")
    SandboxResource.objects.filter(resource_type="Practitioner").update(resource_type="Deleted")  # 404 on read
    response = _launch(browser, live_server)
    assert response.status_code == 200 and urlsplit(response.url).path == "/triage/patient/"
    assert SmartLaunch.objects.get(kind=SmartLaunch.Kind.EHR).user.get_full_name() == ""


def test_human_names_read_as_people_write_them() -> None:
    from reconcile_app.smart.services import human_name_text

    assert human_name_text({"name": [{"use": "nickname", "given": ["Bill"]}, {"use": "official", "prefix": ["Dr."], "given": ["William", "B."], "family": "Osler"}]}) == "Dr. William B. Osler"
    assert human_name_text({"name": [{"text": "Osler, William"}]}) == "Osler, William"
    assert human_name_text({"name": []}) == "" and human_name_text({}) == ""
