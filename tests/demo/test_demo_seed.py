"""The one-command demo seeds a working product: users, the sandbox EHR registration, patients, findings."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from reconcile_app.core.roles import Role, user_roles
from reconcile_app.demo.services import DEMO_PASSWORD, demo_seed
from reconcile_app.fhir.models import Patient
from reconcile_app.sandbox.models import SandboxClient
from reconcile_app.reconciliation.models import Finding
from reconcile_app.smart.models import EhrRegistration
from reconcile_app.transcripts.models import Session

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_celery():  # type: ignore[no-untyped-def]
    """Run the pipeline in-process even where CI points Celery at Redis (no worker in this test)."""
    from config.celery_app import app

    saved = {key: app.conf.get(key) for key in ("task_always_eager", "task_eager_propagates")}
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    app.conf.update(saved)


def test_demo_seed_runs_the_whole_pipeline_and_is_idempotent(django_capture_on_commit_callbacks, eager_celery):
    with django_capture_on_commit_callbacks(execute=True):
        seed = demo_seed(base_url="http://127.0.0.1:8000")
    assert sorted(seed.users_created) == ["admin", "nurse"]
    assert user_roles(User.objects.get(username="nurse")) == {Role.NURSE}
    assert User.objects.get(username="admin").check_password(DEMO_PASSWORD)
    registration = EhrRegistration.objects.get(iss="http://127.0.0.1:8000/sandbox/fhir")
    assert registration.backend_client_id and registration.private_key_pem  # Backend Services ready
    # The EHR (127.0.0.1) opens the app under its loopback twin (localhost): a cross-site frame, as EHRs do.
    app = SandboxClient.objects.get(client_id="reconcile-demo")
    assert app.launch_url == "http://localhost:8000/smart/launch"
    assert set(app.redirect_uris) == {"http://localhost:8000/smart/callback", "http://127.0.0.1:8000/smart/callback"}
    assert registration.frame_ancestors == "http://127.0.0.1:8000"
    assert Patient.objects.filter(registration=registration).count() == seed.patients == 3
    assert Session.objects.exclude(pipeline_status=Session.Pipeline.DONE).count() == 0
    assert Finding.objects.filter(kind__in=["contradiction", "gap"]).exists()

    findings = Finding.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        again = demo_seed(base_url="http://127.0.0.1:8000")
    assert again.users_created == [] and again.uploads == 0
    assert Finding.objects.count() == findings


@pytest.mark.parametrize(("base", "app"), [
    ("http://127.0.0.1:8000", "http://localhost:8000"),
    ("http://localhost:8123", "http://127.0.0.1:8123"),
    ("http://192.168.1.20:8000", "http://192.168.1.20:8000"),
])
def test_the_demo_app_lives_on_the_ehrs_loopback_twin(base: str, app: str) -> None:
    from reconcile_app.demo.services import demo_app_url

    assert demo_app_url(base) == app
