"""Model fields encrypted at rest with Fernet (tokens, private keys)."""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

_PREFIX = "fernet:"


def _fernet() -> MultiFernet:
    keys = list(getattr(settings, "FIELD_ENCRYPTION_KEYS", []) or [])
    if not keys:
        if not settings.DEBUG and "insecure" not in settings.SECRET_KEY:
            raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is required outside the embedded demo")
        # Embedded demo only: derive a key from SECRET_KEY so the one-command start works.
        digest = hashlib.sha256(("field-encryption:" + settings.SECRET_KEY).encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(k.encode() if isinstance(k, str) else k) for k in keys])


def encrypt_str(value: str) -> str:
    return _PREFIX + _fernet().encrypt(value.encode()).decode()


def decrypt_str(value: str) -> str:
    if not value.startswith(_PREFIX):
        raise ValueError("value is not encrypted")
    try:
        return _fernet().decrypt(value[len(_PREFIX):].encode()).decode()
    except InvalidToken as exc:  # wrong key or tampered column
        raise ValueError("cannot decrypt value with the configured keys") from exc


class EncryptedTextField(models.TextField):
    """Stores `fernet:<token>`; Python sees the clear text. Not searchable, by design."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        if value is None or value == "":
            return value
        return decrypt_str(value)

    def get_prep_value(self, value: Any) -> str | None:
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt_str(value)


class EncryptedJSONField(EncryptedTextField):
    """A JSON document stored encrypted (for fhirclient's state, which holds tokens)."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        text = super().from_db_value(value, expression, connection)
        return json.loads(text) if text else None

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value:
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        # Straight to encryption: TextField.get_prep_value would run to_python and undo the dump.
        return encrypt_str(json.dumps(value, sort_keys=True))
