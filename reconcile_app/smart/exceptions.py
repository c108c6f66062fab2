"""SMART domain errors: each one tells the caller whether to retry and what to show."""
from __future__ import annotations

from reconcile_app.core.exceptions import PermanentError, RetryableError


class EhrUnavailable(RetryableError):
    """The EHR (authorization server or FHIR API) timed out, refused the connection or answered 5xx."""


class EhrProtocolError(PermanentError):
    """The EHR answered, but not with what the protocol requires (bad JSON, missing endpoints)."""


class UnknownIssuer(PermanentError):
    """A launch named an `iss` that no active registration holds: nothing is sent to it."""


class LaunchRefused(PermanentError):
    """The launch cannot go on (OAuth error, bad or replayed state, bad id_token).

    `code` is a short, fixed identifier that is safe to audit and to show.
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message, extra={"code": code})
        self.code = code


class TokenRejected(PermanentError):
    """The FHIR server answered 401: the access token is invalid or expired."""


class LaunchExpired(PermanentError):
    """The launch's tokens can no longer be refreshed: the clinician must launch again."""


class ForeignHostLink(PermanentError):
    """A paging link points at another host; following it would hand over the bearer token."""
