"""replay and evaluate over the dev set: conforming results files, the scores table, the isolated run.
No score thresholds here: scores belong to the engine issues (bench/ and the README)."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from reconcile_app.evaluation.results import results_problems
from reconcile_app.transcripts.models import Upload
from tests.transcripts.fakes import fakes_installed

ROOT = Path(__file__).resolve().parents[2]
PATIENTS = ("p08", "p09")  # the two shortest conversations keep the default run quick; CI replays all ten
REAL_ENGINES = all(
    importlib.util.find_spec(m) is not None
    for m in ("reconcile_app.narrative.engines.rules", "reconcile_app.reconciliation.engines.rules")
)


@pytest.fixture
def engines() -> Iterator[None]:
    """The real rules engines once they exist; until then the tiny fakes (mechanics only)."""
    if REAL_ENGINES:
        yield
        return
    with fakes_installed():
        yield


@pytest.fixture(scope="module")
def replayed(dev_set: Path, tmp_path_factory, django_db_blocker) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("results")
    args = ["replay", str(dev_set), "--out", str(out), "--patients", ",".join(PATIENTS), "--no-progress"]
    with django_db_blocker.unblock():
        if REAL_ENGINES:
            call_command(*args, stdout=StringIO(), stderr=StringIO())
        else:
            with fakes_installed():
                call_command(*args, stdout=StringIO(), stderr=StringIO())
    return out


def _check_against_transcript(results: dict, transcript: dict) -> None:
    turns = {t["id"]: s["id"] for s in transcript["sessions"] for t in s["turns"]}
    assert results["patient"] == transcript["patient"]
    assert results_problems(results) == []
    for item in results["memories"] + results["findings"]:
        assert item["turn_ids"] and all(turns[t] == item["session_id"] for t in item["turn_ids"])


def test_replay_writes_one_conforming_results_file_per_patient(replayed: Path, dev_set: Path):
    assert sorted(p.name for p in replayed.iterdir()) == [f"{p}.json" for p in PATIENTS]
    for name in PATIENTS:
        results = json.loads((replayed / f"{name}.json").read_text())
        _check_against_transcript(results, json.loads((dev_set / name / "transcript.json").read_text()))
        assert results["memories"], "the replay produced no memory at all"
        memory_sessions = {m["session_id"] for m in results["memories"]}
        assert {f["session_id"] for f in results["findings"]} <= memory_sessions


@pytest.mark.django_db
def test_replay_leaves_the_apps_own_database_untouched(dev_set: Path, tmp_path: Path):
    Upload.objects.create(source="ui", raw=b"x", sha256="0" * 64, size=1)
    with fakes_installed():  # mechanics only: which database was written
        call_command("replay", str(dev_set), "--out", str(tmp_path), "--patients", "p10", "--no-progress", stdout=StringIO(), stderr=StringIO())
    assert list(Upload.objects.values_list("source", flat=True)) == ["ui"]  # the test database, as it was
    assert (tmp_path / "p10.json").is_file()


def test_evaluate_prints_the_scores_table_per_category_and_kind(replayed: Path, dev_set: Path):
    out = StringIO()
    call_command("evaluate", str(dev_set), str(replayed), "--patients", ",".join(PATIENTS), stdout=out, stderr=StringIO())
    text = out.getvalue()
    for heading in ("detection_rate", "resource_informed_detection", "safety_recall_strict", "false_discrepancies_per_plain_session",
                    "By category", "By kind", "Missed scenarios", "False discrepancies", "Trap violations"):
        assert heading in text
    expected = sum(len(json.loads((dev_set / p / "labels.json").read_text())["scenarios"]) for p in PATIENTS)
    assert re.search(rf"^scenarios\s+{expected}\s*$", text, re.MULTILINE)


def test_evaluate_isolated_reports_the_cascade(replayed: Path, dev_set: Path, django_db_blocker, engines, tmp_path: Path):
    out = StringIO()
    with django_db_blocker.unblock():
        call_command("evaluate", str(dev_set), str(replayed), "--patients", PATIENTS[0], "--isolated", "--json", str(tmp_path / "s.json"),
                     "--verbosity", "0", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert "Isolated (Dimension 2) vs end to end (Dimension 3)" in text and "cascade" in text
    numbers = json.loads((tmp_path / "s.json").read_text())
    assert numbers["isolated"]["scenarios"] == len(json.loads((dev_set / PATIENTS[0] / "labels.json").read_text())["scenarios"])


@pytest.mark.services
def test_replay_of_the_whole_dev_set_needs_only_the_checkout(dev_set: Path, tmp_path: Path):
    """A separate process with the embedded settings, no DATABASE_URL and no broker: as a user runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.local", RECONCILE_VAR_DIR=str(tmp_path / "var"))
    done = subprocess.run([sys.executable, "manage.py", "replay", str(dev_set), "--out", str(tmp_path / "out"), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list((tmp_path / "out").glob("p*.json"))) == len([p for p in dev_set.iterdir() if p.is_dir()])
    assert not (tmp_path / "var" / "reconcile.sqlite3").exists()  # the app's own database was never created
    scored = subprocess.run([sys.executable, "manage.py", "evaluate", str(dev_set), str(tmp_path / "out")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0 and "detection_rate" in scored.stdout
