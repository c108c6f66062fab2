"""Issue 12: outbound calls to EHRs go only to https on public addresses (private ones when listed;
plain http only to loopback in development settings), never with credentials in the URL; discovery
failures all read the same; frame-ancestors takes exact origins; OAuth errors are kept as sent."""
from __future__ import annotations

import pytest
import requests
from fhirclient.server import FHIRUnauthorizedException

from reconcile_app.smart import client
from reconcile_app.smart.exceptions import LaunchRefused
from reconcile_app.smart.forms import ISS_REFUSED, exact_origin
from reconcile_app.smart.models import EhrRegistration
from reconcile_app.smart.selectors import registration_frame_ancestors
from reconcile_app.smart.views import DISCOVERY_FAILED
from tests.smart.test_views_registrations import FORM


@pytest.fixture
def production_policy(settings):  # type: ignore[no-untyped-def]
    settings.SMART_ALLOW_HTTP_LOOPBACK = False
    settings.SMART_ALLOWED_NETWORKS = []


@pytest.mark.parametrize("url", [
    "http://ehr.example/fhir",                 # not https
    "ftp://ehr.example/fhir",
    "https://user:secret@ehr.example/fhir",    # credentials would go out as Basic auth
    "https://10.0.0.5/fhir",                   # private
    "https://172.16.3.4/fhir",
    "https://192.168.1.1/fhir",
    "https://127.0.0.1:8080/fhir",             # loopback
    "https://[::1]/fhir",
    "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
    "https://[fe80::1]/fhir",
    "https://0.0.0.0/fhir",
    "https://100.64.0.1/fhir",                 # shared address space
    "https://[::ffff:10.0.0.5]/fhir",          # IPv4-mapped private
    "https:///fhir",
])
def test_urls_the_app_will_not_call(production_policy, url: str) -> None:
    assert client.outbound_url_problem(url)


def test_public_https_and_listed_networks_are_allowed(production_policy, settings) -> None:  # type: ignore[no-untyped-def]
    assert client.outbound_url_problem("https://ehr.example.org/fhir") == ""
    assert client.outbound_url_problem("https://93.184.216.34/fhir") == ""
    settings.SMART_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    assert client.outbound_url_problem("https://10.20.1.2/fhir") == ""
    assert client.outbound_url_problem("http://10.20.1.2/fhir")  # listed, but plain http is for loopback only


def test_plain_http_only_to_listed_loopback_in_development_settings(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SMART_ALLOW_HTTP_LOOPBACK = True
    settings.SMART_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert client.address_allowed("127.0.0.1", scheme="http")
    assert not client.address_allowed("10.0.0.1", scheme="http")
    settings.SMART_ALLOWED_NETWORKS = []
    assert not client.address_allowed("127.0.0.1", scheme="http")


def test_a_name_resolving_to_a_refused_address_is_never_connected_to(production_policy) -> None:
    """`localhost` passes the syntax check (a name), then resolves to loopback: the connection is
    refused before any packet is sent, and the caller sees the same error as an unreachable host."""
    session = client.http_session()
    with pytest.raises(requests.ConnectionError, match="not allowed"):
        session.get("https://localhost:9/fhir/metadata")


def test_a_credentialed_url_is_refused_before_sending(production_policy) -> None:
    with pytest.raises(requests.exceptions.InvalidURL):
        client.http_session().get("https://user:pw@ehr.example.org/fhir/metadata")


@pytest.mark.django_db
@pytest.mark.parametrize("iss", ["http://ehr.example/fhir", "https://u:p@ehr.example/fhir", "ftp://ehr.example/fhir",
                                 "https://10.1.2.3/fhir", "https://169.254.169.254/fhir"])
def test_the_registration_form_refuses_with_one_message(admin_client, production_policy, iss: str) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.post("/smart/registrations/new/", {**FORM, "client_type": "public", "backend_client_id": "", "iss": iss})
    assert response.status_code == 200 and not EhrRegistration.objects.exists()
    assert response.context["form"].errors["iss"] == [ISS_REFUSED]


@pytest.mark.django_db
def test_discovery_fails_with_one_message_whatever_is_behind_the_address(admin_client, production_policy, live_server) -> None:  # type: ignore[no-untyped-def]
    """A refused private address, a closed port and a server that is not an EHR read the same: the
    discovery form cannot be used to scan the network."""
    messages = []
    for iss in ("https://10.0.0.7/fhir", "https://localhost:9/fhir", f"{live_server.url}/no-such-fhir"):
        registration = EhrRegistration.objects.create(name=iss, iss=iss, client_id="c")
        page = admin_client.post(f"/smart/registrations/{registration.pk}/discover/", follow=True)
        messages.append([str(m) for m in page.context["messages"]])
    assert messages == [[DISCOVERY_FAILED]] * 3


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["https://*", "https://*.example.org", "https://ehr.example/path", "https://u@ehr.example",
                                   "http://ehr.example", "'self'", "*", "https://ehr.example;script-src"])
def test_frame_ancestors_take_exact_origins_only(admin_client, value: str) -> None:  # type: ignore[no-untyped-def]
    response = admin_client.post("/smart/registrations/new/", {**FORM, "client_type": "public", "backend_client_id": "",
                                                                "frame_ancestors": value})
    assert "frame_ancestors" in response.context["form"].errors


@pytest.mark.django_db
def test_frame_ancestors_saved_before_the_check_are_dropped() -> None:
    EhrRegistration.objects.create(name="Old", iss="https://old.example/fhir", client_id="c",
                                   frame_ancestors="https://* https://ehr.example:8443/ https://EHR2.example")
    assert registration_frame_ancestors() == ["https://ehr.example:8443", "https://ehr2.example"]
    assert exact_origin("https://ehr.example:8443/") == "https://ehr.example:8443"


def _http_error(status: int, body: bytes) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = body
    response.headers["Content-Type"] = "application/json"
    return response


@pytest.mark.parametrize(("status", "body", "code"), [
    (401, b'{"error": "invalid_grant"}', "invalid_grant"),      # a spent refresh token, not a bad client
    (401, b"not json", "invalid_client"),
    (400, b'{"error": "invalid_dpop_proof"}', "invalid_dpop_proof"),  # an extension code, kept as sent
    (400, b'{"error": "<b>x</b>"}', "unknown_error"),
    (403, b'{"error": "access_denied"}', "access_denied"),
])
def test_token_endpoint_errors_are_recorded_as_the_ehr_sent_them(status: int, body: bytes, code: str) -> None:
    response = _http_error(status, body)

    def call() -> None:
        if status == 401:
            raise FHIRUnauthorizedException(response)
        raise requests.HTTPError(response=response)

    with pytest.raises(LaunchRefused) as caught:
        client.fhir_client_call(call, what="token refresh")
    assert caught.value.code == code
