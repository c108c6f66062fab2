"""Seed the embedded demo: users, the sandbox EHR and its registration, demo patients and transcripts."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from reconcile_app.core.roles import Role
from reconcile_app.core.services import user_create

logger = logging.getLogger(__name__)

DEMO_CLIENT_ID = "reconcile-demo"
DEMO_BACKEND_CLIENT_ID = "reconcile-backend"
DEMO_USERS = (("nurse", Role.NURSE, "Nora Nurse"), ("admin", Role.ADMIN, "Adam Admin"))
DEMO_PASSWORD = "reconcile-demo"  # embedded demo only; printed on start


@dataclass
class DemoSeed:
    users_created: list[str]
    patients: int
    uploads: int


def demo_data_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "sandbox" / "demo_data"


def demo_users_ensure() -> list[str]:
    created = []
    for username, role, name in DEMO_USERS:
        if not User.objects.filter(username=username).exists():
            user_create(username=username, role=role, password=DEMO_PASSWORD, full_name=name)
            created.append(username)
    return created


LOOPBACK_TWINS = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}


def demo_app_url(base_url: str) -> str:
    """Where the sandbox EHR opens the app: the same server under its loopback twin name, so the EHR
    (127.0.0.1) frames the app (localhost) from another site, as real EHRs do, and the nurse's and the
    clinician's sessions do not share a cookie. Other hosts keep one origin."""
    parts = urlsplit(base_url)
    twin = LOOPBACK_TWINS.get(parts.hostname or "")
    if twin is None:
        return base_url
    return urlunsplit((parts.scheme, f"{twin}:{parts.port}" if parts.port else twin, "", "", ""))


def demo_registration_ensure(*, base_url: str):  # type: ignore[no-untyped-def]
    """Register the sandbox EHR with the app, and the app with the sandbox's authorization server."""
    from reconcile_app.sandbox.services import sandbox_client_register
    from reconcile_app.smart.backend import registration_key_generate, registration_public_jwk
    from reconcile_app.smart.models import EhrRegistration

    iss = f"{base_url}/sandbox/fhir"
    app_url = demo_app_url(base_url)
    sandbox_client_register(
        client_id=DEMO_CLIENT_ID,
        # Launched from the EHR (app_url) or standalone from the app's own page (base_url).
        redirect_uris=sorted({f"{base_url}/smart/callback", f"{app_url}/smart/callback"}),
        jwk_public=None,
        scopes="launch launch/patient openid fhirUser patient/*.rs patient/*.cu offline_access",
        launch_url=f"{app_url}/smart/launch",
    )
    registration, _ = EhrRegistration.objects.update_or_create(
        iss=iss,
        defaults={
            "name": "Sandbox EHR (demo)",
            "client_id": DEMO_CLIENT_ID,
            "client_type": EhrRegistration.ClientType.PUBLIC,
            "frame_ancestors": base_url,
            "write_enabled": True,
            "backend_client_id": DEMO_BACKEND_CLIENT_ID,
            "backend_scopes": "system/*.rs system/DetectedIssue.cu system/Task.cu system/Communication.cu",
        },
    )
    # Backend Services (refreshes without a user): the app's key pair, public half registered with the EHR.
    jwk = registration_public_jwk(registration=registration) or registration_key_generate(registration=registration)
    sandbox_client_register(
        client_id=DEMO_BACKEND_CLIENT_ID, redirect_uris=[], jwk_public=jwk, scopes=registration.backend_scopes
    )
    return registration


@transaction.atomic
def demo_seed(*, base_url: str | None = None) -> DemoSeed:
    from reconcile_app.fhir.services import snapshot_import_bundle
    from reconcile_app.sandbox.services import sandbox_seed_demo
    from reconcile_app.transcripts.models import Upload
    from reconcile_app.transcripts.services import upload_import, upload_receive

    base_url = (base_url or settings.PUBLIC_BASE_URL).rstrip("/")
    users = demo_users_ensure()
    sandbox_seed_demo()
    registration = demo_registration_ensure(base_url=base_url)
    patients = uploads = 0
    for folder in sorted(p for p in demo_data_dir().iterdir() if (p / "bundle.json").exists()):
        bundle = json.loads((folder / "bundle.json").read_text())
        snapshot_import_bundle(bundle=bundle, registration=registration)
        patients += 1
        transcript = folder / "transcript.json"
        if transcript.exists():
            raw = transcript.read_bytes()
            if not Upload.objects.filter(filename=f"demo/{folder.name}.json").exists():
                upload = upload_receive(raw=raw, filename=f"demo/{folder.name}.json", source=Upload.Source.CLI)
                upload_import(upload_id=upload.pk)
                uploads += 1
    return DemoSeed(users_created=users, patients=patients, uploads=uploads)
