"""Browser fixtures: Playwright for Python driving Debian's Chromium against pytest-django's live server."""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import PASSWORD, need

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The README's screenshots are refreshed on request (RECONCILE_SCREENSHOTS=1); ordinary runs write
# under var/ so the suite never dirties the work tree.
SCREENSHOTS = os.path.join(_ROOT, "docs", "screenshots") if os.environ.get("RECONCILE_SCREENSHOTS") == "1" else os.path.join(_ROOT, "var", "screenshots")


@pytest.fixture
def page(chromium_path: str, live_server) -> Iterator:  # type: ignore[no-untyped-def]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the test extra installs it
        need(False, "playwright not installed")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are still synchronous, so Django's async guard is lifted for this fixture only.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_server.url)
        pg = context.new_page()
        pg.set_default_timeout(10_000)
        try:
            yield pg
        finally:
            context.close()
            browser.close()
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


def sign_in(page, username: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
