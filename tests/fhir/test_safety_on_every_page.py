"""Every page about one patient carries its banner and safety context, list pages included."""
from __future__ import annotations

import pytest

from tests.triage.factories import item_create, memory_create, patient_create, session_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def launched(client, clinician):  # type: ignore[no-untyped-def]
    """A clinician whose SMART launch is for one patient (with a record, a conversation and a finding)."""
    patient = patient_create(name="Launched Patient")
    item = item_create(patient=patient)
    memory_create(session=session_create(patient=patient), content="Walks every evening", category="lifestyle", chain_key="")
    client.force_login(clinician)
    session = client.session
    session["smart_patient_pk"] = patient.pk
    session.save()
    return client, patient, item


def _panel(html: str) -> str:
    assert html.count('id="safety-context"') == 1, "exactly one safety context per page"
    start = html.index('id="safety-context"')
    return html[start:html.index("</section>", start)]


@pytest.mark.parametrize("page", ["findings", "finding", "memories", "uploads", "upload form", "record"])
def test_the_patient_pages_show_the_banner_and_the_safety_context(launched, page: str) -> None:  # type: ignore[no-untyped-def]
    client, patient, item = launched
    url = {
        "findings": "/triage/patient/",
        "finding": f"/triage/findings/{item.finding_id}/",
        "memories": f"/memories/patients/{patient.pk}/",
        "uploads": "/transcripts/",
        "upload form": "/transcripts/new/",
        "record": f"/patients/{patient.pk}/",
    }[page]
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('id="patient-banner"') == 1 and "Launched Patient" in html
    panel = _panel(html)
    assert "Penicillin" in panel and "Hives" in panel
    assert "Lisinopril 10 mg tablet" in panel
    assert "Type 2 diabetes mellitus" in panel


def test_pages_without_a_patient_have_no_safety_context(nurse_client) -> None:  # type: ignore[no-untyped-def]
    assert 'id="safety-context"' not in nurse_client.get("/triage/").content.decode()
    assert 'id="safety-context"' not in nurse_client.get("/patients/").content.decode()


def test_the_banner_is_left_to_the_ehr_when_it_says_so(launched, clinician) -> None:  # type: ignore[no-untyped-def]
    from reconcile_app.smart.models import EhrRegistration, SmartLaunch

    client, patient, _ = launched
    registration = EhrRegistration.objects.create(name="EHR", iss="https://ehr.example/fhir", client_id="c")
    launch = SmartLaunch.objects.create(registration=registration, kind="ehr", status="active", need_patient_banner=False,
                                        user=clinician)
    session = client.session
    session["smart_launch_id"] = launch.pk
    session.save()
    for url in ("/triage/patient/", f"/patients/{patient.pk}/", f"/memories/patients/{patient.pk}/"):
        html = client.get(url).content.decode()
        assert 'id="patient-banner"' not in html
        assert "Penicillin" in _panel(html)  # the safety context stays
