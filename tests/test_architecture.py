"""Imports flow one way along the pipeline: no app imports a downstream app."""
from __future__ import annotations

import ast
from pathlib import Path

APP_ROOT = Path(__file__).resolve().parent.parent / "reconcile_app"

# Each app may import itself, the shared apps (core, audit) and the apps listed for it.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "audit": {"core"},
    "terminology": set(),  # the base vocabulary layer: drugs, classes, conditions, lay terms
    "smart": set(),
    "sandbox": set(),
    "fhir": {"smart"},
    "transcripts": {"smart", "fhir"},
    "narrative": {"smart", "fhir", "transcripts"},
    "reconciliation": {"smart", "fhir", "transcripts", "narrative"},
    "triage": {"smart", "fhir", "transcripts", "narrative", "reconciliation"},
    # The context pack reads every pipeline stage and nothing imports it (config/urls.py mounts it).
    "context": {"smart", "fhir", "transcripts", "narrative", "reconciliation", "triage"},
}
SHARED = {"core", "audit", "terminology"}  # base layers, importable from every app
TOP_LEVEL = {"evaluation", "demo", "pipeline", "ledger"}  # orchestrators: may import anything below them


def _imported_apps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "reconcile_app" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_apps_only_import_upstream_apps():
    violations = []
    for app, allowed in ALLOWED.items():
        for path in (APP_ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            bad = _imported_apps(path) - allowed - SHARED - {app}
            if app == "core":
                bad -= {"audit"}  # core's middleware and signals write audit events
            if bad:
                violations.append(f"{path.relative_to(APP_ROOT)} imports {sorted(bad)}")
    assert not violations, "downstream imports:\n" + "\n".join(violations)


def test_every_app_is_known_to_the_rule():
    apps = {p.name for p in APP_ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert apps <= set(ALLOWED) | TOP_LEVEL, f"add these apps to ALLOWED: {sorted(apps - set(ALLOWED) - TOP_LEVEL)}"
