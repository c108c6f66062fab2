"""Per-request id kept in a context variable so logs and audit events can carry it."""
from __future__ import annotations

import contextvars

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
