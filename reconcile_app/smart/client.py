"""All outbound HTTP of the SMART side: discovery, token endpoint, JWKS and FHIR reads, with timeouts."""
from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import requests
import requests.adapters
from django.conf import settings
from fhirclient.auth import FHIROAuth2Auth
from fhirclient.client import FHIRClient
from fhirclient.server import FHIRNotFoundException, FHIRPermissionDeniedException, FHIRUnauthorizedException

from .exceptions import EhrProtocolError, EhrUnavailable, LaunchRefused, TokenRejected

logger = logging.getLogger(__name__)

FHIR_JSON = "application/fhir+json"
OAUTH_URIS_EXT = "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris"
# Links a page may point at must stay within this many pages: a server looping its own
# `next` link must not keep a worker busy forever.
MAX_PAGES = 2000


def http_timeout() -> float:
    return float(getattr(settings, "SMART_HTTP_TIMEOUT_SECONDS", 15))


# --- where the app may connect: https to public addresses, unless a network is listed -------------


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    networks = []
    for value in getattr(settings, "SMART_ALLOWED_NETWORKS", []) or []:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            logger.warning("SMART_ALLOWED_NETWORKS: %r is not a network; ignored", value)
    return networks


def address_allowed(address: str, *, scheme: str) -> bool:
    """Public addresses over https; private, loopback, link-local and reserved ones only when listed
    in SMART_ALLOWED_NETWORKS; plain http only to a listed loopback address in development settings."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    listed = any(ip in network for network in _allowed_networks())
    if scheme == "http":
        return listed and ip.is_loopback and bool(getattr(settings, "SMART_ALLOW_HTTP_LOOPBACK", False))
    return listed or ip.is_global


def outbound_url_problem(url: str) -> str:
    """Why the app will not send a request to this URL ('' when it may): https only (http only for
    loopback in development settings), a host, no credentials (they would be sent as Basic auth), and
    a literal IP address must pass address_allowed. Host names are checked when they resolve."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "not a URL"
    del port
    scheme = parts.scheme.lower()
    allow_http = bool(getattr(settings, "SMART_ALLOW_HTTP_LOOPBACK", False))
    if scheme != "https" and not (scheme == "http" and allow_http):
        return "not https"
    if not parts.hostname:
        return "no host"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "credentials in the URL"
    try:
        ipaddress.ip_address(parts.hostname.split("%", 1)[0])
    except ValueError:
        return ""  # a name: checked against the addresses it resolves to, at connection time
    return "" if address_allowed(parts.hostname, scheme=scheme) else "address not allowed"


def _resolve_allowed(host: str, port: int, *, scheme: str) -> list[str]:
    """The host's addresses that the policy allows, every one checked (not just the first), so a
    name cannot smuggle a private address past the check; the socket then connects to a checked one."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    allowed = [a for a in addresses if address_allowed(a, scheme=scheme)]
    if len(allowed) != len(addresses):
        logger.warning("outbound connection refused by address policy host=%s", host)
        return []
    return allowed


class _GuardedConnectionMixin:
    """Connects only to addresses the policy allows, resolving the name itself (DNS rebinding between
    a check and the connection cannot happen: the checked address is the one connected to)."""

    guard_scheme = "https"

    def _new_conn(self) -> socket.socket:
        from urllib3.exceptions import NewConnectionError
        from urllib3.util import connection as u3connection

        try:
            addresses = _resolve_allowed(self._dns_host, self.port, scheme=self.guard_scheme)  # type: ignore[attr-defined]
        except OSError as exc:
            raise NewConnectionError(self, f"name resolution failed: {exc.__class__.__name__}") from exc  # type: ignore[arg-type]
        if not addresses:
            raise NewConnectionError(self, "the address is not allowed")  # type: ignore[arg-type]
        last: OSError | None = None
        for address in addresses:
            try:
                return u3connection.create_connection(
                    (address, self.port), self.timeout,  # type: ignore[attr-defined]
                    source_address=self.source_address, socket_options=self.socket_options,  # type: ignore[attr-defined]
                )
            except OSError as exc:
                last = exc
        raise NewConnectionError(self, f"connection failed: {last.__class__.__name__}")  # type: ignore[arg-type]


def _guarded_adapter() -> requests.adapters.HTTPAdapter:
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
        guard_scheme = "http"

    class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
        guard_scheme = "https"

    class GuardedHTTPPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    class GuardedAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}

    return GuardedAdapter()


class TimeoutSession(requests.Session):
    """A session that never waits forever, never follows redirects (a redirect could carry a token
    away) and only reaches addresses the outbound policy allows (outbound_url_problem, address_allowed)."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False  # no proxy or .netrc credentials from the environment
        adapter = _guarded_adapter()
        self.mount("https://", adapter)
        self.mount("http://", adapter)

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        problem = outbound_url_problem(str(url))
        if problem:
            logger.warning("outbound request refused (%s) host=%s", problem, urlsplit(str(url)).hostname or "")
            raise requests.exceptions.InvalidURL("the address is not allowed")
        kwargs.setdefault("timeout", http_timeout())
        kwargs["allow_redirects"] = False
        return super().request(method, url, *args, **kwargs)


def http_session(*, bearer: str | None = None) -> TimeoutSession:
    session = TimeoutSession()
    session.headers["Accept"] = FHIR_JSON
    if bearer:
        session.headers["Authorization"] = f"Bearer {bearer}"
    return session


def same_origin(url: str, base: str) -> bool:
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme.lower(), a.netloc.lower()) == (b.scheme.lower(), b.netloc.lower())


def _send(session: requests.Session, method: str, url: str, **kwargs: Any) -> requests.Response:
    """One request; transport faults become EhrUnavailable. Never logs the URL's query or headers."""
    host = urlsplit(url).netloc
    try:
        return session.request(method, url, **kwargs)
    except requests.Timeout as exc:
        logger.warning("EHR request timed out host=%s", host)
        raise EhrUnavailable("The EHR did not answer in time.", extra={"reason": "timeout"}) from exc
    except requests.ConnectionError as exc:
        logger.warning("EHR connection failed host=%s", host)
        raise EhrUnavailable("The EHR could not be reached.", extra={"reason": "connection"}) from exc
    except requests.RequestException as exc:
        raise EhrProtocolError("The request to the EHR failed.", extra={"reason": exc.__class__.__name__}) from exc


def _json(response: requests.Response, what: str) -> dict:
    try:
        body = response.json()
    except ValueError as exc:
        raise EhrProtocolError(f"The EHR's {what} is not JSON.") from exc
    if not isinstance(body, dict):
        raise EhrProtocolError(f"The EHR's {what} is not a JSON object.")
    return body


def _check_status(response: requests.Response, what: str) -> None:
    code = response.status_code
    if code < 300:
        return
    if code == 401:
        raise TokenRejected(f"The EHR refused the access token ({what}).", extra={"status": code})
    if code >= 500 or code == 429:
        raise EhrUnavailable(f"The EHR answered {code} ({what}).", extra={"status": code})
    raise EhrProtocolError(f"The EHR answered {code} ({what}).", extra={"status": code})


# --- discovery ---------------------------------------------------------------------------


def _is_http_url(value: Any) -> bool:
    return isinstance(value, str) and urlsplit(value).scheme in ("http", "https") and bool(urlsplit(value).netloc)


def _from_well_known(body: dict) -> dict:
    keep = (
        "issuer", "jwks_uri", "authorization_endpoint", "token_endpoint", "grant_types_supported",
        "token_endpoint_auth_methods_supported", "token_endpoint_auth_signing_alg_values_supported",
        "scopes_supported", "response_types_supported", "capabilities", "code_challenge_methods_supported",
    )
    return {k: body[k] for k in keep if k in body}


def _from_capability(body: dict) -> dict:
    """The older SMART advertisement: the `oauth-uris` extension on rest[0].security."""
    found: dict[str, str] = {}
    for rest in body.get("rest") or []:
        security = rest.get("security") if isinstance(rest, dict) else None
        for ext in (security or {}).get("extension") or []:
            if not isinstance(ext, dict) or ext.get("url") != OAUTH_URIS_EXT:
                continue
            for sub in ext.get("extension") or []:
                if isinstance(sub, dict) and sub.get("url") in ("authorize", "token", "register"):
                    found[sub["url"]] = str(sub.get("valueUri") or sub.get("valueUrl") or "")
    out: dict[str, Any] = {}
    if found.get("authorize"):
        out["authorization_endpoint"] = found["authorize"]
    if found.get("token"):
        out["token_endpoint"] = found["token"]
    return out


def discovery_fetch(*, iss: str) -> dict:
    """SMART configuration of an EHR: `.well-known/smart-configuration`, else the CapabilityStatement."""
    base = iss.rstrip("/")
    session = http_session()
    session.headers["Accept"] = "application/json"
    config: dict[str, Any] = {}
    response = _send(session, "GET", f"{base}/.well-known/smart-configuration")
    if response.status_code < 300:
        try:
            config = _from_well_known(_json(response, "SMART configuration"))
            config["source"] = "well-known"
        except EhrProtocolError:
            config = {}
    elif response.status_code >= 500:
        _check_status(response, "SMART configuration")
    if not (config.get("authorization_endpoint") or config.get("token_endpoint")):
        session.headers["Accept"] = FHIR_JSON
        meta = _send(session, "GET", f"{base}/metadata")
        _check_status(meta, "CapabilityStatement")
        config = _from_capability(_json(meta, "CapabilityStatement"))
        config["source"] = "capability-statement"
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if key in config and not _is_http_url(config[key]):
            raise EhrProtocolError(f"The EHR advertises an invalid {key}.")
    if not config.get("token_endpoint"):
        raise EhrProtocolError("The EHR advertises no token endpoint.")
    return config


def jwks_fetch(*, url: str) -> dict:
    session = http_session()
    session.headers["Accept"] = "application/json"
    response = _send(session, "GET", url)
    _check_status(response, "JWKS")
    body = _json(response, "JWKS")
    if not isinstance(body.get("keys"), list):
        raise EhrProtocolError("The EHR's JWKS has no keys.")
    return body


# --- token endpoint (Backend Services; the user launch goes through fhirclient) ------------


def token_request(*, token_endpoint: str, data: dict[str, str]) -> dict:
    """POST a form to the token endpoint; 4xx is permanent (bad client / assertion), 5xx retryable."""
    session = http_session()
    session.headers["Accept"] = "application/json"
    response = _send(session, "POST", token_endpoint, data=data)
    if 400 <= response.status_code < 500:
        error = ""
        try:
            error = str(response.json().get("error") or "")[:40]
        except ValueError:
            pass
        raise EhrProtocolError("The EHR refused the token request.", extra={"status": response.status_code, "error": error})
    _check_status(response, "token")
    body = _json(response, "token response")
    if not body.get("access_token"):
        raise EhrProtocolError("The token response holds no access token.")
    return body


# --- FHIR reads ----------------------------------------------------------------------------


def fhir_get(*, session: requests.Session, url: str) -> dict:
    """GET one FHIR resource or Bundle with the session's bearer token."""
    response = _send(session, "GET", url)
    _check_status(response, "FHIR read")
    return _json(response, "FHIR response")


def fhir_post(*, session: requests.Session, url: str, resource: dict) -> dict:
    response = _send(session, "POST", url, json=resource, headers={"Content-Type": FHIR_JSON})
    _check_status(response, "FHIR create")
    return _json(response, "FHIR create response") if response.content else {}


# --- fhirclient (the user launch: authorize URL, code exchange with PKCE, refresh) ------------

def fhir_client_build(*, state: dict, assertion_factory: Callable[[], str] | None = None) -> FHIRClient:
    """Rebuild fhirclient's FHIRClient from our state dict, on our timeout session.

    fhirclient 4.4 does PKCE S256 but neither discovery nor timeouts, nor private_key_jwt for the
    code exchange; the last is added by swapping the auth class of this one instance.
    """
    holder: dict[str, dict] = {}
    client = FHIRClient(state=state, save_func=lambda s: holder.update(state=s))
    client.server.session = TimeoutSession()
    if assertion_factory is not None and isinstance(client.server.auth, FHIROAuth2Auth):
        client.server.auth.__class__ = _AssertingOAuth2Auth
        client.server.auth.assertion_factory = assertion_factory  # type: ignore[attr-defined]
    return client


class _AssertingOAuth2Auth(FHIROAuth2Auth):
    """Confidential clients authenticate code exchange and refresh with a signed JWT (private_key_jwt)."""

    assertion_factory: Callable[[], str] | None = None

    def _with_assertion(self, params: dict) -> dict:
        if self.assertion_factory is not None:
            params["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            params["client_assertion"] = self.assertion_factory()
        return params

    def _code_exchange_params(self, code: str) -> dict:
        return self._with_assertion(super()._code_exchange_params(code))

    def _reauthorize_params(self) -> dict:
        return self._with_assertion(super()._reauthorize_params())


def fhir_client_call(call: Callable[[], Any], *, what: str) -> Any:
    """Run a fhirclient call that talks to the token endpoint; translate its errors into ours.

    fhirclient raises bare Exceptions whose text can include the state or server bodies,
    so only the exception class is ever kept.
    """
    try:
        return call()
    except requests.Timeout as exc:
        raise EhrUnavailable(f"The EHR did not answer in time ({what}).", extra={"reason": "timeout"}) from exc
    except requests.ConnectionError as exc:
        raise EhrUnavailable(f"The EHR could not be reached ({what}).", extra={"reason": "connection"}) from exc
    except (FHIRUnauthorizedException, FHIRPermissionDeniedException, FHIRNotFoundException, requests.HTTPError) as exc:
        response = getattr(exc, "response", None)
        status = response.status_code if response is not None else 0
        if status >= 500:
            raise EhrUnavailable(f"The EHR answered {status} ({what}).", extra={"status": status}) from exc
        # The OAuth error code as the EHR sent it (RFC 6749 5.2), whatever the status: a 401 with
        # invalid_grant is a spent refresh token, not an unknown client.
        sent = _oauth_error_of(response)
        fallback = "invalid_client" if status == 401 else "invalid_grant"
        raise LaunchRefused(f"The EHR refused the {what}.", code=oauth_error_code(sent) or fallback,
                            ) from exc
    except (LaunchRefused, EhrUnavailable):
        raise
    except Exception as exc:  # noqa: BLE001 - fhirclient's own errors are bare Exceptions
        raise LaunchRefused(f"The {what} failed.", code="token_response_invalid") from exc


OAUTH_ERRORS = {
    "invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type", "invalid_scope",
    "server_error", "temporarily_unavailable", "invalid_client", "invalid_grant", "unsupported_grant_type",
    "login_required", "consent_required", "interaction_required",
}


_ERROR_CODE = re.compile(r"^[a-z][a-z0-9_]{0,59}$")


def oauth_error_code(value: str | None) -> str:
    """The OAuth error code as sent, when it is one: the standard codes, or an extension code of
    the same shape (lower-case letters, digits, underscores; RFC 6749 allows such). Anything else is
    attacker-controlled text and is recorded as `unknown_error`."""
    if not value:
        return ""
    return value if value in OAUTH_ERRORS or _ERROR_CODE.match(value) else "unknown_error"


def _oauth_error_of(response: requests.Response | None) -> str:
    if response is None:
        return ""
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("error") or "") if isinstance(body, dict) else ""
