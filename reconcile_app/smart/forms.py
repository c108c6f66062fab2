"""Forms of the SMART pages: every GET parameter and every admin field is validated here."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django import forms
from django.conf import settings

from . import client
from .models import EhrRegistration

ISS_REFUSED = ("Enter the EHR's FHIR base URL: https, a public host name or address (or a network an administrator "
               "allowed in SMART_ALLOWED_NETWORKS), and no user name or password in it.")

_HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$")


def exact_origin(value: str) -> str:
    """The normalised origin (scheme://host[:port]) when `value` is exactly one, else ''. https only;
    http only for a loopback host in development settings (SMART_ALLOW_HTTP_LOOPBACK)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.netloc.rsplit(":", 1)[0] if port is not None else parts.netloc).lower()
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc or not _HOST.match(host):
        return ""
    loopback = host in ("localhost", "127.0.0.1", "[::1]")
    if scheme != "https" and not (scheme == "http" and loopback and getattr(settings, "SMART_ALLOW_HTTP_LOOPBACK", False)):
        return ""
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


class LaunchForm(forms.Form):
    """`/smart/launch?iss=&launch=` as the EHR sends it."""

    iss = forms.URLField(max_length=400, assume_scheme="https")
    launch = forms.CharField(max_length=2000)


class CallbackForm(forms.Form):
    state = forms.CharField(required=False, max_length=200)
    code = forms.CharField(required=False, max_length=4000)
    error = forms.CharField(required=False, max_length=200)


class StandaloneForm(forms.Form):
    registration = forms.ModelChoiceField(queryset=EhrRegistration.objects.filter(active=True).order_by("name"),
                                          empty_label=None, label="EHR")


class RegistrationForm(forms.ModelForm):
    # The stored key is never sent back to the browser: blank keeps it, a new PEM replaces it.
    private_key_pem = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        label="Private key (PEM)", help_text="Leave blank to keep the stored key. Stored encrypted; never shown again.",
    )
    clear_private_key = forms.BooleanField(required=False, label="Remove the stored private key")
    iss = forms.URLField(max_length=400, assume_scheme="https", label="Issuer (iss)",
                         help_text="FHIR base URL the EHR sends as `iss`.")
    jwks_url = forms.URLField(max_length=400, assume_scheme="https", required=False, label="JWKS URL",
                              help_text="Where the EHR fetches our public key, if it does not hold it.")

    class Meta:
        model = EhrRegistration
        fields = [
            "name", "iss", "client_id", "client_type", "scopes", "backend_client_id", "backend_scopes",
            "key_id", "jwks_url", "frame_ancestors", "write_enabled", "active",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored_key = self.instance.private_key_pem if self.instance.pk else ""

    def clean_iss(self) -> str:
        iss = self.cleaned_data["iss"].strip().rstrip("/")
        if client.outbound_url_problem(iss):
            # One message whatever the reason: the form must not help map the network.
            raise forms.ValidationError(ISS_REFUSED)
        return iss

    def clean_private_key_pem(self) -> str:
        pem = (self.cleaned_data.get("private_key_pem") or "").strip()
        if pem:
            try:
                load_pem_private_key(pem.encode(), password=None)
            except (ValueError, TypeError) as exc:
                raise forms.ValidationError("Not an unencrypted PEM private key.") from exc
        return pem

    def clean_frame_ancestors(self) -> str:
        origins = self.cleaned_data.get("frame_ancestors", "").split()
        exact = [exact_origin(o) for o in origins]
        if not all(exact):
            raise forms.ValidationError(
                "Each frame ancestor must be an exact origin such as https://ehr.example.org (https, a host, an "
                "optional port; no wildcard, path or credentials), separated by spaces."
            )
        return " ".join(dict.fromkeys(o for o in exact if o))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        key = data.get("private_key_pem") or ("" if data.get("clear_private_key") else self._stored_key)
        if data.get("client_type") == EhrRegistration.ClientType.CONFIDENTIAL and not key:
            self.add_error("private_key_pem", "A confidential client needs a private key.")
        if data.get("backend_client_id") and not key:
            self.add_error("private_key_pem", "Backend Services needs a private key.")
        return data

    def save(self, commit: bool = True) -> EhrRegistration:
        registration = super().save(commit=False)
        if self.cleaned_data.get("private_key_pem"):
            registration.private_key_pem = self.cleaned_data["private_key_pem"]
        elif self.cleaned_data.get("clear_private_key"):
            registration.private_key_pem = ""
        else:
            registration.private_key_pem = self._stored_key
        return registration
