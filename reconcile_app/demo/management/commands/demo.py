"""demo: migrate, seed the demo data and run the web server plus a Celery worker (no services needed)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

# A cold worker (Django set-up, Celery, the embedded beat) answers in a few seconds; this is the
# most a slow, shared machine gets before the demo gives up rather than show a queue that never fills.
WORKER_READY_SECONDS = 120


class Command(BaseCommand):
    help = "Start reconcile on its embedded default (SQLite + file-system broker) with demo data."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000")
        parser.add_argument("--seed-only", action="store_true", help="Seed and exit (no servers).")

    def handle(self, *args: Any, **options: Any) -> None:
        from reconcile_app.demo.services import DEMO_PASSWORD, demo_seed

        var = Path(settings.VAR_DIR)
        for sub in ("broker/queue", "broker/processed", "broker/control"):
            (var / sub).mkdir(parents=True, exist_ok=True)
        if not options["seed_only"]:
            # First of all: a busy port is the user's to fix, said at once rather than after migrating,
            # and before the worker starts (runserver's own bind failure exits hard).
            _address_free(options["addr"])
        call_command("migrate", interactive=False, verbosity=0)
        base_url = f"http://{options['addr']}"
        if options["seed_only"]:
            seed = demo_seed(base_url=base_url)
            self.stdout.write(self.style.SUCCESS(f"demo seeded: {seed.patients} sandbox patients, {seed.uploads} transcripts queued"))
            return
        node = f"demo-{os.getpid()}@{socket.gethostname()}"
        # Ctrl-C and `kill <pid>` (SIGTERM) both stop the server, then the worker. Set explicitly (and before
        # anything is announced): a shell starts background jobs with SIGINT ignored, and the watchdog
        # relies on SIGTERM reaching us.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        # The worker starts first so the demo transcripts are processed as soon as they are queued.
        worker = _worker_start(node=node, base_url=base_url, var=var)
        try:
            seed = demo_seed(base_url=base_url)
            _worker_wait_ready(worker, node=node)
        except BaseException:
            _worker_stop(worker)
            raise
        watchdog = _Watchdog(worker)
        try:
            self._announce(seed=seed, node=node, base_url=base_url, password=DEMO_PASSWORD)
            call_command("runserver", options["addr"], use_reloader=False)
        except (SystemExit, KeyboardInterrupt):
            pass  # runserver exits on Ctrl-C or SIGTERM, or when the watchdog interrupts it
        finally:
            watchdog.stopping = True
            _worker_stop(worker)
        if watchdog.died_with is not None:
            raise CommandError(
                f"The Celery worker exited unexpectedly (exit code {watchdog.died_with}); nothing uploaded would be "
                "processed, so the demo stopped. Its output is above."
            )

    def _announce(self, *, seed: Any, node: str, base_url: str, password: str) -> None:
        from reconcile_app.demo.services import demo_app_url

        self.stdout.write(self.style.SUCCESS(
            f"demo ready: {seed.patients} sandbox patients, {seed.uploads} transcripts queued, worker {node} running"
        ))
        self.stdout.write(f"  EHR (sandbox) patient list: {base_url}/sandbox/ehr/   <- start here, launch the app for a patient")
        if demo_app_url(base_url) != base_url:
            self.stdout.write(f"    (the EHR frames the app from {demo_app_url(base_url)}: another site, as EHRs embed apps)")
        self.stdout.write(f"  Nurse queue:                {base_url}/triage/   (nurse / {password})")
        self.stdout.write(f"  Admin:                      {base_url}/triage/rules/   (admin / {password})")
        self.stdout.write(f"  Health:                     {base_url}/healthz")
        self.stdout.flush()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _address_free(addr: str) -> None:
    host, _, port = addr.rpartition(":")
    with socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver does
        try:
            probe.bind((host.strip("[]") or "127.0.0.1", int(port)))
        except OSError as exc:
            raise CommandError(f"Cannot listen on {addr} ({exc.strerror}): is another demo running? Try --addr 127.0.0.1:8001.") from exc


def _die_with_parent() -> None:
    """In the worker, before exec: Linux sends it SIGTERM when the demo process ends, however it ends."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the demo's own clean-up still stops the worker
        pass


def _worker_start(*, node: str, base_url: str, var: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "--quiet", "worker", "--beat", "--pool=solo",
         "--loglevel=WARNING", "-n", node, "-s", str(var / "celerybeat-schedule")],
        env={**os.environ, "PUBLIC_BASE_URL": base_url},
        # Its own process group (with its embedded beat): Ctrl-C reaches the demo command, which then
        # stops the group, so a worker exit the demo did not ask for is always a failure.
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )


def _worker_wait_ready(worker: subprocess.Popen, *, node: str) -> None:
    """Wait for the worker's start-up heartbeat (worker_ready signal); fail loudly if it dies or never answers."""
    from reconcile_app.core.models import WorkerHeartbeat

    deadline = time.monotonic() + WORKER_READY_SECONDS
    while time.monotonic() < deadline:
        code = worker.poll()
        if code is not None:
            raise CommandError(
                f"The Celery worker exited during start-up (exit code {code}); its output is above. "
                "The demo cannot process transcripts without it."
            )
        if WorkerHeartbeat.objects.filter(hostname=node).exists():
            return
        time.sleep(0.25)
    raise CommandError(f"The Celery worker did not report ready within {WORKER_READY_SECONDS} s; its output is above.")


def _signal_group(worker: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(worker.pid, signum)  # the worker and its beat process
    except (ProcessLookupError, PermissionError):
        pass


def _worker_stop(worker: subprocess.Popen) -> None:
    """Stop the worker's process group: a worker that died leaves its embedded beat process behind."""
    if worker.poll() is None:
        _signal_group(worker, signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            _signal_group(worker, signal.SIGKILL)
            worker.wait()
    _signal_group(worker, signal.SIGKILL)


class _Watchdog:
    """Interrupts the web server when the worker dies, so the demo never runs on without one."""

    def __init__(self, worker: subprocess.Popen) -> None:
        self.worker = worker
        self.stopping = False
        self.died_with: int | None = None
        threading.Thread(target=self._watch, name="demo-worker-watchdog", daemon=True).start()

    def _watch(self) -> None:
        code = self.worker.wait()
        if self.stopping:
            return
        self.died_with = code
        sys.stderr.write(f"\nThe Celery worker exited (exit code {code}): stopping the demo.\n")
        os.kill(os.getpid(), signal.SIGTERM)
