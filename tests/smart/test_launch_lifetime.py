"""Issue 12: a clinician's access ends with the SMART launch: a new launch for another patient, the
EHR's back-channel logout, signing out, the maximum age; abandoned launches lose their PKCE state."""
from __future__ import annotations

import time
from datetime import timedelta

import jwt
import pytest
import requests
from django.utils import timezone

from reconcile_app.audit.models import AuditEvent
from reconcile_app.fhir.models import Patient
from reconcile_app.sandbox.services import sandbox_key_get
from reconcile_app.smart.models import SmartLaunch
from reconcile_app.smart.services import launches_expire_abandoned
from tests.smart.sandbox_env import APP_CLIENT, OTHER_PATIENT, PATIENT, PRACTITIONER, ehr_launch_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def _record_url(live_server, fhir_id: str) -> str:  # type: ignore[no-untyped-def]
    return f"{live_server.url}/patients/{Patient.objects.get(fhir_id=fhir_id).pk}/"


def _launch(browser, live_server, patient: str = PATIENT) -> SmartLaunch:  # type: ignore[no-untyped-def]
    response = browser.get(ehr_launch_url(live_server, patient=patient), timeout=60)
    assert response.status_code == 200
    return SmartLaunch.objects.filter(kind=SmartLaunch.Kind.EHR, patient_fhir_id=patient).latest("created_at")


def _ended(browser, url: str) -> None:  # type: ignore[no-untyped-def]
    page = browser.get(url, timeout=30)
    assert page.status_code == 401 and 'data-launch-error="expired"' in page.text and "Penicillin" not in page.text


def test_a_new_launch_for_another_patient_ends_access_to_the_first_in_every_browser(live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    tab_a, tab_b = requests.Session(), requests.Session()  # two EHR windows of the same clinician
    first = _launch(tab_a, live_server, PATIENT)
    record_a = _record_url(live_server, PATIENT)
    assert "Penicillin" in tab_a.get(record_a, timeout=30).text
    second = _launch(tab_b, live_server, OTHER_PATIENT)
    assert first.user_id == second.user_id
    first.refresh_from_db()
    assert first.status == SmartLaunch.Status.EXPIRED and first.error_code == "superseded" and first.client_state is None
    _ended(tab_a, record_a)
    assert tab_b.get(_record_url(live_server, OTHER_PATIENT), timeout=30).status_code == 200
    assert AuditEvent.objects.filter(action="smart.launch.ended", details__reason="superseded").exists()


def test_relaunching_the_same_patient_keeps_the_other_window(live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    tab_a, tab_b = requests.Session(), requests.Session()
    first = _launch(tab_a, live_server, PATIENT)
    _launch(tab_b, live_server, PATIENT)
    first.refresh_from_db()
    assert first.status == SmartLaunch.Status.ACTIVE
    assert tab_a.get(_record_url(live_server, PATIENT), timeout=30).status_code == 200


def _logout_token(live_server, **claims) -> str:  # type: ignore[no-untyped-def]
    key = sandbox_key_get()
    body = {"iss": f"{live_server.url}/sandbox/fhir", "aud": APP_CLIENT, "iat": int(time.time()), "jti": "j1",
            "events": {"http://schemas.openid.net/event/backchannel-logout": {}}, **claims}
    return jwt.encode(body, key.private_key_pem, algorithm="RS256", headers={"kid": key.kid})


def test_the_ehrs_back_channel_logout_ends_the_clinicians_access(live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    browser = requests.Session()
    launch = _launch(browser, live_server)
    assert launch.id_token_sub == PRACTITIONER
    url = f"{live_server.url}/smart/backchannel-logout"
    forged = requests.post(url, data={"logout_token": _logout_token(live_server, sub=PRACTITIONER)[:-4] + "AAAA"}, timeout=30)
    assert forged.status_code == 400
    with_nonce = requests.post(url, data={"logout_token": _logout_token(live_server, sub=PRACTITIONER, nonce="n")}, timeout=30)
    assert with_nonce.status_code == 400
    launch.refresh_from_db()
    assert launch.status == SmartLaunch.Status.ACTIVE
    ok = requests.post(url, data={"logout_token": _logout_token(live_server, sub=PRACTITIONER)}, timeout=30)
    assert ok.status_code == 200 and ok.headers["Cache-Control"] == "no-store"
    launch.refresh_from_db()
    assert launch.status == SmartLaunch.Status.EXPIRED and launch.error_code == "ehr_logout" and launch.client_state is None
    _ended(browser, _record_url(live_server, PATIENT))


def test_signing_out_of_reconcile_ends_the_launch(live_server, sandbox_ehr) -> None:  # type: ignore[no-untyped-def]
    browser = requests.Session()
    launch = _launch(browser, live_server)
    page = browser.get(_record_url(live_server, PATIENT), timeout=30)
    csrf = browser.cookies.get("csrftoken")
    browser.post(f"{live_server.url}/logout/", data={"csrfmiddlewaretoken": csrf}, headers={"Referer": page.url}, timeout=30)
    launch.refresh_from_db()
    assert launch.status == SmartLaunch.Status.EXPIRED and launch.error_code == "logout" and launch.client_state is None


def test_a_launch_older_than_its_maximum_age_ends(live_server, sandbox_ehr, settings) -> None:  # type: ignore[no-untyped-def]
    browser = requests.Session()
    launch = _launch(browser, live_server)
    SmartLaunch.objects.filter(pk=launch.pk).update(created_at=timezone.now() - timedelta(seconds=settings.SMART_LAUNCH_MAX_SECONDS + 1))
    _ended(browser, _record_url(live_server, PATIENT))
    launch.refresh_from_db()
    assert launch.error_code == "max_age"


def test_abandoned_launches_lose_their_pkce_state(live_server, sandbox_ehr, settings) -> None:  # type: ignore[no-untyped-def]
    browser = requests.Session()
    started = browser.get(ehr_launch_url(live_server), timeout=60, allow_redirects=False)
    assert started.status_code == 302
    pending = SmartLaunch.objects.get(status=SmartLaunch.Status.PENDING)
    assert pending.client_state  # the PKCE verifier, encrypted
    assert launches_expire_abandoned() == 0  # still young
    SmartLaunch.objects.filter(pk=pending.pk).update(created_at=timezone.now() - timedelta(seconds=settings.SMART_PENDING_LAUNCH_SECONDS + 1))
    assert launches_expire_abandoned() == 1
    pending.refresh_from_db()
    assert (pending.status, pending.error_code, pending.client_state, pending.state_hash) == ("expired", "abandoned", None, None)
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "reconcile_app.smart.tasks.launches_expire_abandoned_task" in tasks
