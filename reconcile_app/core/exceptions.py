"""Domain errors: each says whether a retry can help."""
from __future__ import annotations


class ReconcileError(Exception):
    """Base error. `message` is safe to show a user and to log: it never holds clinical text."""

    retryable = False

    def __init__(self, message: str, *, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class RetryableError(ReconcileError):
    """A passing fault (timeout, 5xx, broker down): try again later."""

    retryable = True


class PermanentError(ReconcileError):
    """Retrying cannot help (bad input, 4xx, revoked grant): record it and stop."""


class ValidationFailed(PermanentError):
    """Input failed validation; `errors` lists precise, user-facing problems."""

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message, extra={"errors": errors or []})
        self.errors = errors or []
