"""Browser fixtures: Playwright for Python driving Debian's Chromium (third-party cookies blocked, as
current Chromium does), with axe-core (npm, tests/browser/package.json) checking every page visited."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PASSWORD, need

HERE = Path(__file__).resolve().parent
_ROOT = HERE.parent.parent
# The README's screenshots come from the running demo (test_demo_end_to_end) and are refreshed on request
# (RECONCILE_SCREENSHOTS=1); ordinary runs write under var/ so the suite never dirties the work tree.
SCRATCH_SCREENSHOTS = str(_ROOT / "var" / "screenshots")
SCREENSHOTS = str(_ROOT / "docs" / "screenshots") if os.environ.get("RECONCILE_SCREENSHOTS") == "1" else SCRATCH_SCREENSHOTS
AXE_JS = HERE / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    # Third-party cookies blocked, as Chromium's phase-out does: an EHR framing the app from another
    # site keeps the app's cookies only if they are partitioned (CHIPS).
    "--test-third-party-cookie-phaseout",
]
# Impacts that fail a page (axe-core's scale: minor, moderate, serious, critical).
AXE_FAILING_IMPACTS = ("serious", "critical")


def _axe_install() -> None:
    """`.ci/run` runs `npm ci` here; where services are required (CI) a missing install is repaired,
    failing clearly. A plain `./dev test` never reaches for the npm registry: the browser tests skip."""
    if AXE_JS.exists() or not shutil.which("npm") or os.environ.get("REQUIRE_SERVICES") != "1":
        return
    result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                            capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        pytest.fail(f"npm ci failed in {HERE}: {result.stderr.strip()[-500:]}")


@pytest.fixture(scope="session")
def axe_source() -> str:
    _axe_install()
    need(AXE_JS.exists(), f"axe-core not installed: run `npm ci` in {HERE}")
    return AXE_JS.read_text()


class Axe:
    """Runs axe-core in a page or frame and fails on serious or critical violations. It also records
    every document the browser commits, so a test that visits a page without checking it fails."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.visited: list[str] = []
        self.checked: set[str] = set()

    def watch(self, page: Any) -> None:
        page.on("framenavigated", lambda frame: self.visited.append(frame.url))

    def check(self, target: Any, *, exclude: list[str] | None = None) -> None:
        """`target`: a Page or a Frame (axe runs inside each document; frames are checked on their own)."""
        target.wait_for_load_state("load")
        # Evaluated through the DevTools protocol, so the app's CSP (script-src 'self') does not apply.
        if not target.evaluate("() => typeof window.axe !== 'undefined'"):
            target.evaluate(self.source)
        result = target.evaluate(
            "([exclude]) => axe.run(exclude.length ? {exclude: exclude.map(s => [s])} : document, {iframes: false})",
            [exclude or []],
        )
        bad = [v for v in result["violations"] if v.get("impact") in AXE_FAILING_IMPACTS]
        summary = [
            {"rule": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"][:5]]}
            for v in bad
        ]
        assert not bad, f"axe: serious/critical violations on {target.url}:\n{json.dumps(summary, indent=1)}"
        self.checked.add(target.url)

    def unchecked(self) -> list[str]:
        return sorted({u for u in self.visited if u not in self.checked and not u.startswith(("about:", "data:"))})


@pytest.fixture
def axe(axe_source: str) -> Iterator[Axe]:
    checker = Axe(axe_source)
    yield checker
    unchecked = checker.unchecked()
    assert not unchecked, f"pages visited without an axe check: {unchecked}"


@pytest.fixture
def chromium(chromium_path: str) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the test extra installs it
        need(False, "playwright not installed")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are still synchronous, so Django's async guard is lifted for this fixture only.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def new_page(browser: Any, axe: Axe, *, base_url: str, timezone_id: str | None = None) -> Any:
    """A page in its own context (its own cookie jar, optionally the browser's time zone), watched by axe."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=base_url, timezone_id=timezone_id)
    page = context.new_page()
    page.set_default_timeout(15_000)
    axe.watch(page)
    return page


@pytest.fixture
def page(chromium: Any, axe: Axe, live_server, settings) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    # A real browser gets the cookies production sends (SameSite=None; Secure; Partitioned on loopback).
    settings.FRAMED_COOKIES = True
    pg = new_page(chromium, axe, base_url=live_server.url)
    try:
        yield pg
    finally:
        pg.context.close()


def sign_in(page, username: str, password: str = PASSWORD, *, axe: Axe | None = None) -> None:  # type: ignore[no-untyped-def]
    page.goto("/login/")
    if axe is not None:
        axe.check(page)
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
