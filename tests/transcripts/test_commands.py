"""Management commands: import_transcript (with its progress) and create_platform_token."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reconcile_app.transcripts.models import CoachingPlatform, Session, Upload
from reconcile_app.transcripts.selectors import platform_for_token

from .conftest import transcript_bytes


def test_import_transcript_imports_and_runs_the_pipeline_inline(patient, fake_engines, tmp_path):
    path = tmp_path / "export.json"
    path.write_bytes(transcript_bytes(sessions=2, patient=""))
    out = StringIO()
    call_command("import_transcript", str(path), "--patient", "Patient/pt-test-1", "--inline", stdout=out, stderr=StringIO())
    assert "2 new" in out.getvalue() and "done: 2 session(s) processed, 0 failed" in out.getvalue()
    assert Upload.objects.get().source == "cli"
    assert set(Session.objects.values_list("pipeline_status", flat=True)) == {"done"}


def test_import_transcript_reports_errors_and_keeps_the_file(patient, tmp_path):
    path = tmp_path / "export.txt"
    path.write_text("=== Session 2026-01-05 18:02 ===\nno speaker here\n")
    err = StringIO()
    with pytest.raises(CommandError, match="stored but not imported"):
        call_command("import_transcript", str(path), "--patient", "Patient/pt-test-1", stdout=StringIO(), stderr=err)
    assert "line 2: expected 'Speaker: text'" in err.getvalue()
    assert Upload.objects.get().status == Upload.Status.INVALID


def test_import_transcript_refuses_an_unknown_patient(patient, tmp_path):
    path = tmp_path / "export.json"
    path.write_bytes(transcript_bytes())
    with pytest.raises(CommandError, match="no single patient"):
        call_command("import_transcript", str(path), "--patient", "Patient/nobody", stdout=StringIO())


def test_create_platform_token_prints_a_working_token_once_and_revokes(db):
    out = StringIO()
    call_command("create_platform_token", "WellCoach", stdout=out, stderr=StringIO())
    token = out.getvalue().strip()
    platform = platform_for_token(token=token)
    assert platform is not None and platform.token_hash != token and token not in platform.token_prefix + platform.token_hash
    call_command("create_platform_token", "WellCoach", "--revoke", stdout=StringIO())
    assert platform_for_token(token=token) is None and CoachingPlatform.objects.get().revoked_at is not None
