"""Write side of SMART: registrations, discovery, the launch (begin, callback), token refresh and FHIR access."""
from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.backends.base import SessionBase
from django.db import connection, transaction
from django.utils import timezone

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create

from . import client
from .backend import backend_token_get, registration_assertion
from .exceptions import EhrProtocolError, EhrUnavailable, LaunchExpired, LaunchRefused, TokenRejected
from .models import EhrRegistration, SmartLaunch

logger = logging.getLogger(__name__)

SESSION_STATES = "smart_oauth_states"  # pending OAuth states of this browser session (clear text, server-side)
MAX_PENDING_STATES = 5
# Create to write back a confirmed finding; update to retract it (entered-in-error) when its source is withdrawn.
WRITE_SCOPES = ("patient/DetectedIssue.cu", "patient/Task.cu", "patient/Communication.cu")
ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "ES256", "ES384"]
# Refresh a little before the server would refuse the token.
EXPIRY_MARGIN = timedelta(seconds=30)


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


# --- registrations -------------------------------------------------------------------------


@transaction.atomic
def registration_save(*, registration: EhrRegistration) -> EhrRegistration:
    """Normalize and save a registration built by the admin form."""
    registration.iss = registration.iss.strip().rstrip("/")
    registration.scopes = " ".join(registration.scopes.split())
    registration.backend_scopes = " ".join(registration.backend_scopes.split())
    registration.full_clean()
    registration.save()
    return registration


def registration_discover(*, registration: EhrRegistration) -> dict:
    """Fetch the EHR's SMART configuration and keep it on the registration."""
    config = client.discovery_fetch(iss=registration.iss)
    config["fetched_at"] = timezone.now().isoformat()
    registration.discovery = config
    registration.save(update_fields=["discovery", "updated_at"])
    return config


def _discovery_current(registration: EhrRegistration) -> dict:
    """Fresh discovery on each launch; a stored copy covers a passing discovery outage."""
    try:
        return registration_discover(registration=registration)
    except EhrUnavailable:
        if registration.discovery.get("authorization_endpoint"):
            return registration.discovery
        raise


def launch_scopes(registration: EhrRegistration) -> str:
    """Requested scopes without `launch`/`launch/patient`: fhirclient adds the right one for the launch kind."""
    scopes = [s for s in registration.scopes.split() if s not in ("launch", "launch/patient")]
    if registration.write_enabled:
        scopes += [s for s in WRITE_SCOPES if s not in scopes]
    return " ".join(dict.fromkeys(scopes))


# --- launch: begin -------------------------------------------------------------------------


def launch_begin(
    *, registration: EhrRegistration, launch_token: str | None, redirect_uri: str, session: SessionBase
) -> tuple[SmartLaunch, str]:
    """Create a pending launch and the authorize URL (PKCE S256 by fhirclient); bind the state to the session."""
    discovery = _discovery_current(registration)
    if not discovery.get("authorization_endpoint"):
        raise EhrProtocolError("The EHR advertises no authorization endpoint.")
    state = secrets.token_urlsafe(32)
    if not session.session_key:
        session.create()
    fhir_state = {
        "app_id": registration.client_id,
        "scope": launch_scopes(registration),
        "redirect": redirect_uri,
        "launch_token": launch_token or None,
        "server": {
            "base_uri": registration.iss,
            "auth_type": "oauth2",
            "auth": {
                "app_id": registration.client_id,
                "aud": registration.iss,
                "authorize_uri": discovery["authorization_endpoint"],
                "token_uri": discovery["token_endpoint"],
                "redirect_uri": redirect_uri,
                "auth_state": state,
            },
        },
    }
    fhir = client.fhir_client_build(state=fhir_state)
    authorize_url = fhir.authorize_url  # generates the PKCE verifier inside fhir's state
    launch = SmartLaunch.objects.create(
        registration=registration,
        kind=SmartLaunch.Kind.EHR if launch_token else SmartLaunch.Kind.STANDALONE,
        status=SmartLaunch.Status.PENDING,
        state_hash=sha256_hex(state),
        session_key_hash=sha256_hex(session.session_key or ""),
        client_state=fhir.state,
    )
    pending = [s for s in session.get(SESSION_STATES, []) if isinstance(s, str)][-(MAX_PENDING_STATES - 1):]
    session[SESSION_STATES] = [*pending, state]
    return launch, authorize_url


# --- launch: callback ----------------------------------------------------------------------


def _state_claim(*, state: str, session: SessionBase) -> SmartLaunch:
    """The state must be one this browser session started, and is usable exactly once."""
    pending = [s for s in session.get(SESSION_STATES, []) if isinstance(s, str)]
    match = next((s for s in pending if hmac.compare_digest(s, state)), None)
    if match is None:
        raise LaunchRefused("This sign-in response does not belong to this browser session.", code="foreign_state")
    session[SESSION_STATES] = [s for s in pending if s != match]
    launch = SmartLaunch.objects.filter(state_hash=sha256_hex(state)).select_related("registration").first()
    if launch is None:
        raise LaunchRefused("Unknown launch.", code="foreign_state")
    if not hmac.compare_digest(launch.session_key_hash, sha256_hex(session.session_key or "")):
        raise LaunchRefused("This sign-in response does not belong to this browser session.", code="foreign_state")
    # Conditional update: of two requests replaying the same state, only one proceeds.
    claimed = SmartLaunch.objects.filter(pk=launch.pk, status=SmartLaunch.Status.PENDING).update(
        status=SmartLaunch.Status.FAILED, error_code="callback_in_progress"
    )
    if not claimed:
        raise LaunchRefused("This sign-in response was already used.", code="replayed_state")
    launch.refresh_from_db()
    return launch


def _expires_at(fhir: Any) -> datetime | None:
    """fhirclient keeps a naive local expiry on the auth object and drops it from its state: keep it ourselves."""
    local = getattr(fhir.server.auth, "expires_at", None)
    if local is None:
        return None
    return timezone.now() + (local - datetime.now())


def _issuer_allowed(claim: str, registration: EhrRegistration, discovery: dict) -> bool:
    allowed = {registration.iss.rstrip("/")}
    if discovery.get("issuer"):
        allowed.add(str(discovery["issuer"]).rstrip("/"))
    return claim.rstrip("/") in allowed or client.same_origin(claim, registration.iss)


def id_token_validate(*, id_token: str, registration: EhrRegistration) -> dict:
    """Verify the id_token's signature against the EHR's JWKS, its audience (our client id) and issuer."""
    return _ehr_jwt_validate(token=id_token, registration=registration, require=["exp", "iat", "iss", "aud", "sub"])


def _ehr_jwt_validate(*, token: str, registration: EhrRegistration, require: list[str]) -> dict:
    """A JWT signed by the registered EHR (id_token, logout token): signature by the EHR's JWKS,
    audience our client id, issuer the EHR."""
    id_token = token
    discovery = registration.discovery or {}
    try:
        header = jwt.get_unverified_header(id_token)
        unverified = jwt.decode(id_token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise LaunchRefused("The EHR's identity token is malformed.", code="id_token_invalid") from exc
    if header.get("alg") not in ID_TOKEN_ALGORITHMS:
        raise LaunchRefused("The EHR's identity token uses an unaccepted algorithm.", code="id_token_invalid")
    issuer = str(unverified.get("iss") or "")
    if not _issuer_allowed(issuer, registration, discovery):
        raise LaunchRefused("The identity token comes from another issuer.", code="id_token_invalid")
    jwks_uri = discovery.get("jwks_uri")
    if not jwks_uri:
        # No jwks_uri in the SMART configuration: ask the issuer's OpenID configuration, which we
        # only do because the issuer was checked to be the registered EHR above.
        jwks_uri = _openid_jwks_uri(issuer)
    keys = jwt.PyJWKSet.from_dict(client.jwks_fetch(url=jwks_uri)).keys
    candidates = [k for k in keys if not header.get("kid") or k.key_id == header.get("kid")]
    for key in candidates:
        try:
            return jwt.decode(
                id_token, key.key, algorithms=[header["alg"]], audience=registration.client_id, issuer=issuer,
                options={"require": require}, leeway=60,
            )
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as exc:
            raise LaunchRefused("The EHR's identity token failed validation.", code="id_token_invalid") from exc
    raise LaunchRefused("The EHR's identity token signature does not verify.", code="id_token_invalid")


def _openid_jwks_uri(issuer: str) -> str:
    session = client.http_session()
    session.headers["Accept"] = "application/json"
    try:
        body = client.fhir_get(session=session, url=issuer.rstrip("/") + "/.well-known/openid-configuration")
    except (EhrProtocolError, TokenRejected) as exc:
        raise LaunchRefused("The EHR publishes no keys for its identity token.", code="id_token_invalid") from exc
    uri = body.get("jwks_uri")
    if not isinstance(uri, str) or not client.same_origin(uri, issuer):
        raise LaunchRefused("The EHR publishes no keys for its identity token.", code="id_token_invalid")
    return uri


def clinician_for_identity(*, iss: str, fhir_user: str, name: str = "") -> User:
    """The local account of an EHR user: one per (iss, fhirUser), no password, clinician role. The name
    follows the EHR's on every launch (an account made before the name was known gets it later)."""
    username = "smart-" + sha256_hex(f"{iss}|{fhir_user}")[:20]
    user = User.objects.filter(username=username).first()
    if user is None:
        return user_create(username=username, role=Role.CLINICIAN, password=None, full_name=name[:150])
    first, _, last = name.partition(" ")
    if name and (user.first_name, user.last_name) != (first[:150], last[:150]):
        user.first_name, user.last_name = first[:150], last[:150]
        user.save(update_fields=["first_name", "last_name"])
    return user


def human_name_text(resource: dict) -> str:
    """A FHIR resource's display name: its first usable HumanName (official first), as text or given + family."""
    names = [n for n in resource.get("name") or [] if isinstance(n, dict)]
    names.sort(key=lambda n: n.get("use") != "official")
    for n in names:
        text = str(n.get("text") or "").strip()
        if text:
            return text
        parts = [str(p) for p in [*(n.get("prefix") or []), *(n.get("given") or []), n.get("family") or ""] if p]
        if parts:
            return " ".join(" ".join(parts).split())
    return ""


def fhir_user_name(*, registration: EhrRegistration, fhir_user: str, access_token: str) -> str:
    """The name on the fhirUser resource (Practitioner, PractitionerRole's practitioner, Patient,
    RelatedPerson), read with the launch's own token; '' when the EHR will not say. Only URLs on the
    registered EHR are followed."""
    base = registration.iss.rstrip("/")
    url = fhir_user if fhir_user.startswith(("https://", "http://")) else f"{base}/{fhir_user.lstrip('/')}"
    if not client.same_origin(url, base) or not access_token:
        return ""
    session = client.http_session(bearer=access_token)
    try:
        resource = client.fhir_get(session=session, url=url)
        if resource.get("resourceType") == "PractitionerRole":
            ref = str((resource.get("practitioner") or {}).get("reference") or "")
            if not ref.startswith("Practitioner/"):
                return str((resource.get("practitioner") or {}).get("display") or "")
            resource = client.fhir_get(session=session, url=f"{base}/{ref}")
    except (EhrUnavailable, EhrProtocolError, TokenRejected) as exc:
        # Not worth failing a sign-in over: the account keeps its previous name (or none).
        logger.info("fhirUser name unavailable error=%s", exc.__class__.__name__)
        return ""
    return human_name_text(resource)[:150]


def _assertion_factory(registration: EhrRegistration) -> Any:
    if registration.client_type != EhrRegistration.ClientType.CONFIDENTIAL:
        return None
    return lambda: registration_assertion(registration=registration)


def _state_without_secrets_of_context(state: dict) -> dict:
    """The id_token is validated once and not kept; tokens stay (encrypted) for refresh and reads."""
    ctx = dict(state.get("launch_context") or {})
    ctx.pop("id_token", None)
    return {**state, "launch_context": ctx}


def launch_complete(*, state: str, code: str, error: str, session: SessionBase) -> SmartLaunch:
    """Check the state, exchange the code (PKCE verifier from the launch), validate the id_token, keep the context."""
    if not state:
        raise LaunchRefused("The sign-in response has no state.", code="missing_state")
    launch = _state_claim(state=state, session=session)
    try:
        return _launch_finish(launch=launch, state=state, code=code, error=error)
    except (LaunchRefused, EhrUnavailable, EhrProtocolError) as exc:
        code_ = getattr(exc, "code", None) or exc.__class__.__name__.lower()
        SmartLaunch.objects.filter(pk=launch.pk).update(status=SmartLaunch.Status.FAILED, error_code=code_[:60], client_state=None)
        exc.extra.setdefault("launch_id", launch.pk)
        raise


def _launch_finish(*, launch: SmartLaunch, state: str, code: str, error: str) -> SmartLaunch:
    registration = launch.registration
    if error:
        raise LaunchRefused("The EHR did not authorize the launch.", code=client.oauth_error_code(error))
    if not code:
        raise LaunchRefused("The sign-in response has no authorization code.", code="missing_code")
    fhir = client.fhir_client_build(state=launch.client_state, assertion_factory=_assertion_factory(registration))
    redirect_uri = launch.client_state["server"]["auth"]["redirect_uri"]
    callback = f"{redirect_uri}?{urlencode({'state': state, 'code': code})}"
    client.fhir_client_call(lambda: fhir.handle_callback(callback), what="token request")
    context = dict(fhir.launch_context or {})
    id_token = context.get("id_token")
    if not isinstance(id_token, str):
        raise LaunchRefused("The EHR sent no identity token.", code="id_token_missing")
    claims = id_token_validate(id_token=id_token, registration=registration)
    fhir_user = str(claims.get("fhirUser") or claims.get("profile") or "")
    if not fhir_user:
        raise LaunchRefused("The identity token names no FHIR user.", code="id_token_invalid")
    patient_id = str(context.get("patient") or "")
    if not patient_id:
        raise LaunchRefused("The EHR gave no patient context.", code="no_patient")
    name = str(claims.get("name") or "").strip()
    if not name:
        # No OpenID `name` claim (many EHRs send only fhirUser): ask the EHR who fhirUser is.
        name = fhir_user_name(registration=registration, fhir_user=fhir_user,
                              access_token=str(getattr(fhir.server.auth, "access_token", "") or ""))
    user = clinician_for_identity(iss=registration.iss, fhir_user=fhir_user, name=name)
    banner = context.get("need_patient_banner")
    launch.user = user
    launch.status = SmartLaunch.Status.ACTIVE
    launch.error_code = ""
    launch.patient_fhir_id = patient_id[:64]
    launch.encounter_fhir_id = str(context.get("encounter") or "")[:64]
    launch.fhir_user = fhir_user[:200]
    # Outside an EHR (standalone) nothing else shows who the patient is: always show the banner.
    launch.need_patient_banner = True if launch.kind == SmartLaunch.Kind.STANDALONE else banner is not False
    launch.scopes_granted = str(context.get("scope") or "")[:800]
    launch.client_state = _state_without_secrets_of_context(fhir.state)
    launch.expires_at = _expires_at(fhir)
    launch.id_token_sub = str(claims.get("sub") or "")[:255]
    launch.id_token_sid = str(claims.get("sid") or "")[:255]
    launch.save()
    launches_supersede(launch=launch)
    return launch


# --- the end of a launch: clinician access lasts as long as the launch ---------------------


def launch_end(*, launch_id: int, reason: str) -> bool:
    """End a live user launch: EXPIRED with the reason, tokens dropped. True when it was live."""
    return bool(SmartLaunch.objects.filter(pk=launch_id, status=SmartLaunch.Status.ACTIVE).update(
        status=SmartLaunch.Status.EXPIRED, error_code=reason[:60], client_state=None, updated_at=timezone.now()
    ))


def launches_supersede(*, launch: SmartLaunch) -> int:
    """A new launch for another patient ends the user's launches of other patients: the EHR's
    context moved on, and so does the clinician's access (in every browser session)."""
    if launch.user_id is None or not launch.patient_fhir_id:
        return 0
    return (
        SmartLaunch.objects.filter(user_id=launch.user_id, status=SmartLaunch.Status.ACTIVE)
        .exclude(kind=SmartLaunch.Kind.BACKEND)
        .exclude(pk=launch.pk)
        .exclude(registration_id=launch.registration_id, patient_fhir_id=launch.patient_fhir_id)
        .update(status=SmartLaunch.Status.EXPIRED, error_code="superseded", client_state=None, updated_at=timezone.now())
    )


def launch_max_age() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "SMART_LAUNCH_MAX_SECONDS", 8 * 3600)))


def launch_access_check(*, launch: SmartLaunch | None) -> str:
    """Why the launch no longer grants access ('' while it does): not active (expired, superseded,
    logged out at the EHR, revoked), older than SMART_LAUNCH_MAX_SECONDS, or its access token has
    expired and the EHR refuses a refresh (an EHR ends `online_access` refresh tokens at logout).
    EhrUnavailable passes through: an EHR that does not answer has not said the launch ended."""
    if launch is None:
        return "no_launch"
    if launch.status != SmartLaunch.Status.ACTIVE:
        return launch.error_code or launch.status
    if launch.created_at and launch.created_at + launch_max_age() <= timezone.now():
        launch_end(launch_id=launch.pk, reason="max_age")
        return "max_age"
    if launch.expires_at and launch.expires_at <= timezone.now():
        try:
            # Passing the expired token lets a request that waited for another's refresh use its result.
            launch_token_refresh(launch_id=launch.pk, failed_token=launch_access_token(launch))
        except LaunchExpired as exc:
            return str(exc.extra.get("reason") or "expired")
    return ""


@transaction.atomic
def launches_expire_abandoned() -> int:
    """Pending launches never completed (the user left at the EHR's sign-in) lose their encrypted
    PKCE state after SMART_PENDING_LAUNCH_SECONDS; run by beat."""
    cutoff = timezone.now() - timedelta(seconds=int(getattr(settings, "SMART_PENDING_LAUNCH_SECONDS", 900)))
    return SmartLaunch.objects.filter(status=SmartLaunch.Status.PENDING, created_at__lt=cutoff).update(
        status=SmartLaunch.Status.EXPIRED, error_code="abandoned", client_state=None, state_hash=None, updated_at=timezone.now()
    )


BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"


def backchannel_logout(*, logout_token: str) -> int:
    """OpenID Connect Back-Channel Logout: the EHR says a user's session there ended; every launch of
    that user (by `sid`, else by `sub`) from that EHR ends. Returns how many launches ended."""
    try:
        issuer = str(jwt.decode(logout_token, options={"verify_signature": False}).get("iss") or "")
    except jwt.PyJWTError as exc:
        raise LaunchRefused("The logout token is malformed.", code="logout_token_invalid") from exc
    registration = next((r for r in EhrRegistration.objects.filter(active=True)
                         if _issuer_allowed(issuer, r, r.discovery or {})), None) if issuer else None
    if registration is None:
        raise LaunchRefused("The logout token comes from no registered EHR.", code="logout_token_invalid")
    claims = _ehr_jwt_validate(token=logout_token, registration=registration, require=["iat", "iss", "aud", "events"])
    events = claims.get("events")
    if not isinstance(events, dict) or BACKCHANNEL_EVENT not in events or "nonce" in claims:
        raise LaunchRefused("Not a back-channel logout token.", code="logout_token_invalid")
    sid, sub = str(claims.get("sid") or ""), str(claims.get("sub") or "")
    if not sid and not sub:
        raise LaunchRefused("The logout token names no session or subject.", code="logout_token_invalid")
    launches = SmartLaunch.objects.filter(registration=registration, status=SmartLaunch.Status.ACTIVE).exclude(kind=SmartLaunch.Kind.BACKEND)
    launches = launches.filter(id_token_sid=sid) if sid else launches.filter(id_token_sub=sub)
    return launches.update(status=SmartLaunch.Status.EXPIRED, error_code="ehr_logout", client_state=None, updated_at=timezone.now())


# --- tokens in use -------------------------------------------------------------------------


def launch_access_token(launch: SmartLaunch) -> str:
    return str(((launch.client_state or {}).get("server") or {}).get("auth", {}).get("access_token") or "")


def launch_mark_expired(*, launch_id: int, reason: str) -> None:
    SmartLaunch.objects.filter(pk=launch_id).update(status=SmartLaunch.Status.EXPIRED, error_code=reason[:60], client_state=None)


def _refresh_with_ehr(launch: SmartLaunch) -> str:
    """Spend the refresh token; on success the launch row (not yet saved) holds the new state. Returns a
    failure reason, or '' on success. The launch context is not touched: a refresh response may omit it."""
    state = launch.client_state or {}
    if not state.get("server", {}).get("auth", {}).get("refresh_token"):
        return "no_refresh_token"
    fhir = client.fhir_client_build(state=state, assertion_factory=_assertion_factory(launch.registration))
    try:
        client.fhir_client_call(fhir.reauthorize, what="token refresh")
    except LaunchRefused as exc:
        return exc.code or "refresh_failed"
    launch.client_state = _state_without_secrets_of_context(fhir.state)
    launch.expires_at = _expires_at(fhir)
    return ""


def launch_token_refresh(*, launch_id: int, failed_token: str | None = None) -> SmartLaunch:
    """Refresh once, serialized by a row lock: refresh tokens rotate, so two workers must not both spend one."""
    if connection.vendor == "sqlite":
        return _launch_token_refresh_unlocked(launch_id=launch_id, failed_token=failed_token)
    reason = ""
    with transaction.atomic():
        launch = SmartLaunch.objects.select_for_update().select_related("registration").get(pk=launch_id)
        if launch.status != SmartLaunch.Status.ACTIVE:
            raise LaunchExpired("This launch has ended; open the app from the EHR again.")
        current = launch_access_token(launch)
        if failed_token is not None and current and current != failed_token:
            return launch  # another worker refreshed while we waited for the lock
        reason = _refresh_with_ehr(launch)
        if not reason:
            launch.save(update_fields=["client_state", "expires_at", "updated_at"])
            return launch
    launch_mark_expired(launch_id=launch_id, reason=reason)
    raise LaunchExpired("The EHR session has expired; open the app from the EHR again.", extra={"reason": reason})


def _launch_token_refresh_unlocked(*, launch_id: int, failed_token: str | None) -> SmartLaunch:
    """SQLite (the embedded demo, the default test run) locks the whole database for a write
    transaction, and the sandbox EHR answering the refresh writes to that same database: holding
    the lock over the HTTP call would deadlock. Refresh optimistically instead, and settle a lost
    race (the other worker's rotation makes ours fail) by re-reading the row."""
    launch = SmartLaunch.objects.select_related("registration").get(pk=launch_id)
    if launch.status != SmartLaunch.Status.ACTIVE:
        raise LaunchExpired("This launch has ended; open the app from the EHR again.")
    spent = launch_access_token(launch)
    if failed_token is not None and spent and spent != failed_token:
        return launch
    reason = _refresh_with_ehr(launch)
    if not reason:
        SmartLaunch.objects.filter(pk=launch_id, status=SmartLaunch.Status.ACTIVE).update(
            client_state=launch.client_state, expires_at=launch.expires_at, updated_at=timezone.now()
        )
        return launch
    latest = SmartLaunch.objects.select_related("registration").get(pk=launch_id)
    if latest.status == SmartLaunch.Status.ACTIVE and launch_access_token(latest) not in ("", spent):
        return latest  # another worker refreshed first
    launch_mark_expired(launch_id=launch_id, reason=reason)
    raise LaunchExpired("The EHR session has expired; open the app from the EHR again.", extra={"reason": reason})


@dataclass
class FhirAccess:
    """Where to read and with which token: a user's launch or Backend Services. Renews once on 401."""

    base: str
    registration: EhrRegistration
    launch: SmartLaunch | None = None
    token: str = ""
    renewed: bool = field(default=False)

    def session(self) -> Any:
        return client.http_session(bearer=self.token)

    def renew(self) -> None:
        if self.renewed:
            raise (LaunchExpired("The EHR session has expired; open the app from the EHR again.")
                   if self.launch is not None and self.launch.kind != SmartLaunch.Kind.BACKEND
                   else TokenRejected("The EHR refused the system token."))
        self.renewed = True
        if self.launch is not None and self.launch.kind != SmartLaunch.Kind.BACKEND:
            self.launch = launch_token_refresh(launch_id=self.launch.pk, failed_token=self.token)
            self.token = launch_access_token(self.launch)
        else:
            self.launch, self.token = backend_token_get(registration=self.registration, force=True)

    def get(self, url: str) -> dict:
        """GET with the bearer; on 401 renew the token once and retry, then give up."""
        try:
            return client.fhir_get(session=self.session(), url=url)
        except TokenRejected:
            self.renew()
            try:
                return client.fhir_get(session=self.session(), url=url)
            except TokenRejected as exc:
                if self.launch is not None and self.launch.kind != SmartLaunch.Kind.BACKEND:
                    launch_mark_expired(launch_id=self.launch.pk, reason="token_rejected")
                    raise LaunchExpired("The EHR refused the session; open the app from the EHR again.") from exc
                raise

    def post(self, url: str, resource: dict) -> dict:
        try:
            return client.fhir_post(session=self.session(), url=url, resource=resource)
        except TokenRejected:
            self.renew()
            return client.fhir_post(session=self.session(), url=url, resource=resource)


def fhir_access_for_launch(*, launch: SmartLaunch) -> FhirAccess:
    if launch.status != SmartLaunch.Status.ACTIVE:
        raise LaunchExpired("This launch has ended; open the app from the EHR again.")
    if launch.expires_at and launch.expires_at <= timezone.now() + EXPIRY_MARGIN:
        launch = launch_token_refresh(launch_id=launch.pk)
    return FhirAccess(base=launch.registration.iss, registration=launch.registration, launch=launch,
                      token=launch_access_token(launch))


def fhir_access_for_backend(*, registration: EhrRegistration) -> FhirAccess:
    launch, token = backend_token_get(registration=registration)
    return FhirAccess(base=registration.iss, registration=registration, launch=launch, token=token)


def fhir_access_for(*, registration: EhrRegistration, launch: SmartLaunch | None) -> FhirAccess:
    """A user's launch when there is a live one for this EHR, else Backend Services."""
    if launch is not None and launch.registration_id == registration.pk and launch.kind != SmartLaunch.Kind.BACKEND:
        return fhir_access_for_launch(launch=launch)
    return fhir_access_for_backend(registration=registration)


_SYSTEM_CREATE = re.compile(r"^system/(\*|[A-Z][A-Za-z]+)\.(write|\*|c[rud]*s?)$")


def backend_can_write(scopes: str) -> bool:
    """Whether system scopes include a create permission (v1 `.write`/`.*`, v2 `.c...`)."""
    return any(_SYSTEM_CREATE.match(s) for s in scopes.split())


def launch_bearer_for_patient(*, registration: EhrRegistration, patient_fhir_id: str) -> str | None:
    """A token that may write for this patient (e.g. the write-back of a confirmed finding): a live user
    launch for the patient (refreshed first when about to expire), else a Backend Services token when
    the EHR granted system write scopes. A nurse confirms with no clinician launch alive, so without
    the second the write would go out unauthorized. None when neither exists."""
    launch = (
        SmartLaunch.objects.select_related("registration")
        .filter(registration=registration, patient_fhir_id=patient_fhir_id, status=SmartLaunch.Status.ACTIVE)
        .exclude(kind=SmartLaunch.Kind.BACKEND)
        .order_by("-created_at")
        .first()
    )
    if launch is not None:
        try:
            token = fhir_access_for_launch(launch=launch).token
        except LaunchExpired:
            token = ""
        if token:
            return token
    if not (registration.backend_client_id and registration.private_key_pem and backend_can_write(registration.backend_scopes)):
        return None
    try:
        backend, token = backend_token_get(registration=registration)
    except (LaunchRefused, EhrUnavailable, EhrProtocolError, TokenRejected) as exc:
        logger.warning("backend token for write-back unavailable error=%s", exc.__class__.__name__)
        return None
    # The EHR may grant less than asked: a read-only grant cannot write.
    return token if backend_can_write(backend.scopes_granted or registration.backend_scopes) else None


def launch_from_iss(*, iss: str) -> EhrRegistration:
    from .exceptions import UnknownIssuer
    from .selectors import registration_get_by_iss

    parts = urlsplit(iss or "")
    registration = registration_get_by_iss(iss=iss) if parts.scheme in ("http", "https") and parts.netloc else None
    if registration is None:
        raise UnknownIssuer("This EHR is not registered with reconcile.")
    return registration
