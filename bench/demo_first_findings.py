"""Benchmark: from `./dev demo` on a fresh clone to the first findings in the nurse's queue (issue 11: < 2 min).

Run from anywhere (needs git, Python 3.11 and the package index `./dev` installs from):

    python bench/demo_first_findings.py [--repo /work/main] [--cold-cache] [--runs 1]

Each run clones the repository's HEAD into a new temporary directory and starts `./dev demo` there on a free
port, with nothing else: it creates `.venv`, installs the pinned packages, migrates, seeds, starts the worker
and serves. The clock stops when the nurse (signed in over HTTP like a browser) sees a finding row in
/triage/. `--cold-cache` also gives the run an empty extraction-lexicon cache (RECONCILE_LEXICON_CACHE),
as on a machine that never ran reconcile; otherwise the user's cache (~/.cache/reconcile) is used.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
LIMIT_SECONDS = 120.0
GIVE_UP_SECONDS = 600.0
NURSE = ("nurse", "reconcile-demo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Browser:
    """Enough of a browser for the nurse's queue: it keeps Secure cookies on loopback, as browsers do
    (the demo sends SameSite=None; Secure; Partitioned there), which requests' own jar will not send
    over http, so the Cookie header is written here and redirects are followed by hand."""

    def __init__(self) -> None:
        self.http = requests.Session()
        self.cookies: dict[str, str] = {}

    def request(self, method: str, url: str, **kwargs: object) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}) or {})  # type: ignore[call-overload]
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.request(method, url, headers=headers, allow_redirects=False, timeout=5, **kwargs)
        self.cookies.update({c.name: c.value for c in response.cookies})
        self.http.cookies.clear()
        if response.is_redirect:
            return self.request("GET", requests.compat.urljoin(url, response.headers["Location"]))
        return response


def _queue_rows(base: str, browser: Browser) -> int | None:
    """Rows in the nurse's queue, signing in when needed; None while the server is not answering yet."""
    try:
        page = browser.request("GET", f"{base}/triage/")
        if "/login/" in page.url:
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            if token is None:
                return None
            page = browser.request("POST", f"{base}/login/?next=/triage/", headers={"Referer": f"{base}/login/"},
                                   data={"csrfmiddlewaretoken": token.group(1), "username": NURSE[0], "password": NURSE[1]})
    except requests.RequestException:
        return None
    if page.status_code != 200 or "/login/" in page.url:
        return None
    return page.text.count("data-row")


def run_once(*, repo: Path, cold_cache: bool) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="reconcile-fresh-"))
    clone = work / "fresh"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE", "RECONCILE_VAR_DIR", "VIRTUAL_ENV")}
    if cold_cache:
        env["RECONCILE_LEXICON_CACHE"] = str(work / "lexicon-cache")
    log_path = work / "demo.log"
    marks: dict[str, float] = {}
    with open(log_path, "wb") as log:
        start = time.monotonic()
        demo = subprocess.Popen(["./dev", "demo", "--addr", f"127.0.0.1:{port}"], cwd=clone, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        browser = Browser()
        try:
            while time.monotonic() - start < GIVE_UP_SECONDS:
                if demo.poll() is not None:
                    raise SystemExit(f"./dev demo exited ({demo.returncode}):\n{log_path.read_text()[-3000:]}")
                text = log_path.read_text(errors="replace")
                if "venv" not in marks and (clone / ".venv").exists() and list((clone / ".venv").glob(".installed-*")):
                    marks["venv"] = time.monotonic() - start
                if "ready" not in marks and "demo ready" in text:
                    marks["ready"] = time.monotonic() - start
                if "ready" in marks:
                    rows = _queue_rows(base, browser)
                    if rows:
                        marks["queue"] = time.monotonic() - start
                        marks["rows"] = rows
                        break
                time.sleep(0.5)
            else:
                raise SystemExit(f"no findings in the queue within {GIVE_UP_SECONDS:.0f} s:\n{log_path.read_text()[-3000:]}")
        finally:
            try:
                os.killpg(demo.pid, signal.SIGTERM)  # ./dev execs python: the demo, which stops its worker
                demo.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(demo.pid, signal.SIGKILL)
    shutil.rmtree(work, ignore_errors=True)
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cold-cache", action="store_true", help="an empty extraction-lexicon cache")
    args = parser.parse_args()
    print(f"fresh clone of {args.repo} (HEAD), `./dev demo`, {'cold' if args.cold_cache else 'warm'} lexicon cache; "
          f"load average {os.getloadavg()[0]:.1f}")
    worst = 0.0
    for n in range(1, args.runs + 1):
        marks = run_once(repo=args.repo, cold_cache=args.cold_cache)
        worst = max(worst, marks["queue"])
        print(f"run {n}: venv installed {marks.get('venv', 0):.1f} s, demo ready {marks['ready']:.1f} s, "
              f"findings in the nurse queue {marks['queue']:.1f} s ({int(marks['rows'])} rows)")
    verdict = "PASS" if worst < LIMIT_SECONDS else "FAIL"
    print(f"{verdict}: worst {worst:.1f} s against the {LIMIT_SECONDS:.0f} s limit")
    sys.exit(0 if verdict == "PASS" else 1)


if __name__ == "__main__":
    main()
