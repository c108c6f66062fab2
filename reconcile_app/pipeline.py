"""The whole narrative flow in one place: from a stored upload to routed findings, per patient, in order.

::

    upload_receive(raw bytes)  ── committed first: nothing received is ever lost
          │
    upload_import  ── parse + validate all-or-nothing ──✗──▶ Upload INVALID (errors kept, raw kept)
          │             match patient ──✗──▶ Upload HELD ──(admin maps)──▶ upload_import again
          │             add only new sessions (Session PENDING); conflicts reported, not merged
          │
    sessions_pending signal ─▶ pipeline_kick(patient_id)  ── enqueue after commit; a broker outage
          │                                                    is logged and the sweep re-enqueues
          │
    pipeline_patient_advance_task(patient_id)     (Celery, acks_late, ids only)
          │   claim the patient's lease (conditional UPDATE on PatientPipeline) ──busy──▶ exit
          │   (45 s, renewed every 10 s by a heartbeat thread and after every session)
          │   oldest pending session first (at least one, then until the time budget is
          │   spent); stop at a FAILED one (order is strict):
          │     EXTRACTING   extraction_run_get_or_create → extraction_run_execute
          │     RECONCILING  reconciliation_run_get_or_create(latest snapshot) → reconciliation_run_execute
          │     routing      triage_items_route(findings=...)      (when the triage app provides it)
          │     re-check     ledger.session_chain_recheck: findings of the states this session outdated
          │     DONE
          │   RetryableError ─▶ retried with backoff (5 times, lease held for the retry), then FAILED;
          │   PermanentError or an engine crash ─▶ FAILED (message shown, retry button)
          │   release the lease; more pending (or arrived meanwhile) ─▶ enqueue again
          │
    pipeline_sweep_task (beat, every 30 s)  ── re-enqueues patients with pending work and a free
                                               or expired lease (lost messages, dead workers: a
                                               killed worker's patient resumes within ~75 s)

    session_withdraw / upload_withdraw (consent) ─▶ session_withdrawn signal ─▶ ledger.session_revoke
          (breadth-first over provenance: memories revoked without their words, findings revoked or
          kept and marked, queue items withdrawn, write-backs retracted in the EHR), turns deleted,
          raw upload sealed, audit kept; a step that was running re-checks after the engines and
          revokes whatever it wrote

    record_changed (a new record version) ─▶ ledger.record_reevaluate (after commit, under the lease):
          only findings whose cited resources or scope changed are re-evaluated

The transcripts app sits upstream of the engines, so it never imports this module: it announces
`sessions_pending` and `session_withdrawn` (transcripts/signals.py) and the receivers below act.
They and the tasks are registered when the top-level evaluation app loads (EvaluationConfig.ready).

Every step is idempotent on database constraints (runs keyed by content hash + engine version,
their rows written in the same transaction that marks them done), so a message redelivered after a
killed worker redoes at most one step and never duplicates a memory or a finding. Replay and
evaluation call `pipeline_patient_drain` in-process: the same services, no broker.
"""
from __future__ import annotations

import importlib.util
import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from enum import StrEnum

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.dispatch import receiver
from django.db.models import Q
from django.utils import timezone

from reconcile_app.core.exceptions import PermanentError, RetryableError
from reconcile_app.reconciliation.types import DISCREPANCY_KINDS
from reconcile_app.transcripts.models import PatientPipeline, Session
from reconcile_app.transcripts.signals import session_withdrawn, sessions_pending

logger = logging.getLogger(__name__)

ACTIVE = (Session.Pipeline.PENDING, Session.Pipeline.EXTRACTING, Session.Pipeline.RECONCILING)


class Outcome(StrEnum):
    BUSY = "busy"  # another delivery holds the patient's lease
    IDLE = "idle"  # nothing pending
    MORE = "more"  # sessions remain (budget spent): enqueue again
    BLOCKED = "blocked"  # a failed session holds back the later ones


def lease_seconds() -> int:
    # Short: a live holder keeps it by its heartbeat (below), a dead one loses it within this long.
    return int(getattr(settings, "PIPELINE_LEASE_SECONDS", 45))


def heartbeat_seconds() -> float:
    return float(getattr(settings, "PIPELINE_HEARTBEAT_SECONDS", 10))


class LeaseHeartbeat:
    """Renews the patient's lease every few seconds from a daemon thread while a task works, however
    long one engine call takes. It dies with the worker process (SIGKILL, out of memory, a hard time
    limit), so the lease of a dead worker lapses within PIPELINE_LEASE_SECONDS and the sweep resumes
    the patient. A renewal that finds the lease taken (ours lapsed meanwhile) stops renewing."""

    def __init__(self, *, patient_id: int, token: str, interval: float) -> None:
        self.patient_id, self.token, self.interval = patient_id, token, interval
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"lease-heartbeat-{patient_id}", daemon=True)
        self.renewals = 0

    def __enter__(self) -> LeaseHeartbeat:
        if self.interval > 0:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=self.interval + 5)

    def _run(self) -> None:
        from django.db import connection

        try:
            while not self.stop_event.wait(self.interval):
                try:
                    held = PatientPipeline.objects.filter(patient_id=self.patient_id, lease_token=self.token).update(
                        lease_until=timezone.now() + timedelta(seconds=lease_seconds())
                    )
                except Exception as exc:  # noqa: BLE001 - a failed renewal is retried at the next beat
                    logger.warning("lease heartbeat for patient %s failed (%s)", self.patient_id, exc.__class__.__name__)
                    continue
                if not held:
                    logger.warning("lease of patient %s was lost; heartbeat stops", self.patient_id)
                    return
                self.renewals += 1
        finally:
            connection.close()  # this thread's own connection


def budget_seconds() -> float:
    return float(getattr(settings, "PIPELINE_TASK_BUDGET_SECONDS", 30))


def lease_claim(*, patient_id: int, token: str) -> bool:
    """Conditional UPDATE: free, expired, or already ours (a redelivered message has the same id)."""
    PatientPipeline.objects.get_or_create(patient_id=patient_id)
    now = timezone.now()
    claimed = PatientPipeline.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_token=token), patient_id=patient_id
    ).update(lease_token=token, lease_until=now + timedelta(seconds=lease_seconds()), last_run_at=now)
    return claimed == 1


def lease_renew(*, patient_id: int, token: str) -> bool:
    """lease_claim for a holder between sessions: the patient's row exists (the claim made it), so only the
    conditional UPDATE runs."""
    now = timezone.now()
    renewed = PatientPipeline.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now) | Q(lease_token=token), patient_id=patient_id
    ).update(lease_token=token, lease_until=now + timedelta(seconds=lease_seconds()), last_run_at=now)
    return renewed == 1


def retry_hold_seconds() -> int:
    # The longest backoff between retries (the task's retry_backoff_max) plus a margin.
    return int(getattr(settings, "PIPELINE_RETRY_HOLD_SECONDS", 330))


def lease_hold(*, patient_id: int, token: str, seconds: int) -> None:
    PatientPipeline.objects.filter(patient_id=patient_id, lease_token=token).update(
        lease_until=timezone.now() + timedelta(seconds=seconds)
    )


def lease_release(*, patient_id: int, token: str) -> None:
    PatientPipeline.objects.filter(patient_id=patient_id, lease_token=token).update(lease_token="", lease_until=None)


def session_next(*, patient_id: int) -> Session | None:
    """The oldest session not finished; a FAILED one is returned too, because it blocks the rest."""
    return (
        Session.objects.filter(patient_id=patient_id, pipeline_status__in=(*ACTIVE, Session.Pipeline.FAILED))
        .select_related("patient")  # session_process reads the patient's snapshot
        .order_by("started_at", "id")
        .first()
    )


def has_pending(*, patient_id: int) -> bool:
    nxt = session_next(patient_id=patient_id)
    return nxt is not None and nxt.pipeline_status != Session.Pipeline.FAILED


def _set_status(session: Session, status: str, error: str = "") -> None:
    # Never overwrite a withdrawal that happened while the step ran.
    Session.objects.filter(pk=session.pk, withdrawn_at__isnull=True).update(pipeline_status=status, pipeline_error=error[:300])


def _route(findings: list) -> None:
    """Routing into the triage queue, when the triage app provides it (it is built separately)."""
    if importlib.util.find_spec("reconcile_app.triage.services") is None:
        return
    from reconcile_app.triage import services as triage_services

    route = getattr(triage_services, "triage_items_route", None)
    if route is not None:
        route(findings=findings)


def session_process(*, session: Session, engine: str | None = None) -> None:
    """Extraction → reconciliation against the latest snapshot → routing, for one session."""
    from reconcile_app.fhir.selectors import snapshot_latest
    from reconcile_app.ledger.services import session_chain_recheck, session_revoke
    from reconcile_app.narrative.selectors import memory_earlier_keys, session_turn_rows
    from reconcile_app.narrative.services import extraction_run_execute, extraction_run_get_or_create
    from reconcile_app.reconciliation.services import reconciliation_run_execute, reconciliation_run_get_or_create

    _set_status(session, Session.Pipeline.EXTRACTING)
    rows = session_turn_rows(session=session)  # read once: the run's content hash and the engine's input
    run = extraction_run_get_or_create(session=session, engine=engine, rows=rows, claim=True)  # inserted running: executed next
    # The latest snapshot and the keys of the earlier memories, read once for both engine steps: the extraction's
    # record and prior state, the reconciliation's record and history (the extraction changes neither: it only
    # outdates earlier states, which the history keeps). A record that changes meanwhile is re-evaluated under the
    # lease (ledger.record_reevaluate), as one changing during the engine call always was.
    snapshot = snapshot_latest(patient=session.patient)
    earlier = memory_earlier_keys(session=session)
    # The run as just read or created, with this session (its patient too), rather than read again by id.
    extraction_run_execute(run_id=run.pk, engine=engine, run=run, rows=rows, snapshot=snapshot, earlier=earlier)
    if snapshot is None:
        raise RetryableError("the patient's record has not been loaded yet")
    _set_status(session, Session.Pipeline.RECONCILING)
    rrun = reconciliation_run_get_or_create(session=session, snapshot=snapshot, engine=engine)
    rrun = reconciliation_run_execute(run_id=rrun.pk, engine=engine, run=rrun, earlier=earlier)
    if Session.objects.filter(pk=session.pk, withdrawn_at__isnull=False).exists():
        # Consent was withdrawn while the engines ran: revoke what they wrote after the withdrawal.
        session_revoke(session=session, reason="consent withdrawn while the session was processed")
        return
    # Routing reads the memory and session of every discrepancy, and passes over any other finding: only
    # discrepancies are read (most findings of a session are not), and none at all when the run wrote none (its
    # stats count them as written; a run's findings are never edited). A run without the count is read as before.
    if rrun.stats.get("discrepancies", 1):
        _route(list(rrun.findings.filter(kind__in=DISCREPANCY_KINDS).select_related("memory", "session")))
    session_chain_recheck(session=session)
    _set_status(session, Session.Pipeline.DONE)


def pipeline_patient_advance(
    *,
    patient_id: int,
    token: str,
    engine: str | None = None,
    final_attempt: bool = True,
    budget: float | None = None,
    on_session: Callable[[Session], None] | None = None,
    heartbeat: bool = False,
) -> Outcome:
    """Process the patient's pending sessions oldest-first while holding the lease (within a budget).
    `heartbeat` renews the lease from a thread while it works (worker tasks; in-process callers that
    cannot die apart from their caller do without)."""
    if not lease_claim(patient_id=patient_id, token=token):
        logger.info("pipeline patient %s busy", patient_id)
        return Outcome.BUSY
    deadline = time.monotonic() + (budget_seconds() if budget is None else budget)
    outcome = Outcome.IDLE
    beat = LeaseHeartbeat(patient_id=patient_id, token=token, interval=heartbeat_seconds() if heartbeat else 0)
    try:
        with beat:
            outcome = _advance_sessions(patient_id=patient_id, token=token, engine=engine, final_attempt=final_attempt,
                                        deadline=deadline, on_session=on_session)
    except RetryableError:
        # The retry (same task id) reclaims the lease; until then the sweep and other messages keep
        # off, so the backoff holds. Should the retry be lost, the lease lapses and the sweep resumes.
        _reconnect_if_dropped()
        try:
            lease_hold(patient_id=patient_id, token=token, seconds=retry_hold_seconds())
        except (OperationalError, InterfaceError):
            logger.warning("pipeline patient %s: lease not extended, the database is still away", patient_id)
        raise
    except BaseException:
        lease_release(patient_id=patient_id, token=token)
        raise
    lease_release(patient_id=patient_id, token=token)
    # A kick that arrived while we held the lease exited as BUSY; look again after releasing.
    if outcome == Outcome.IDLE and has_pending(patient_id=patient_id):
        outcome = Outcome.MORE
    return outcome


def _advance_sessions(*, patient_id: int, token: str, engine: str | None, final_attempt: bool, deadline: float,
                      on_session: Callable[[Session], None] | None) -> Outcome:
    """The per-session loop; the lease is renewed after every session as well as by the heartbeat."""
    outcome = Outcome.IDLE
    while True:
        session = session_next(patient_id=patient_id)
        if session is None:
            outcome = Outcome.IDLE
            break
        if session.pipeline_status == Session.Pipeline.FAILED:
            outcome = Outcome.BLOCKED
            break
        _process_guarded(session=session, engine=engine, final_attempt=final_attempt)
        if on_session is not None:
            on_session(session)
        if time.monotonic() > deadline:  # at least one session per claim, then share the workers
            break  # the check after the release turns this into MORE if work remains
        if not lease_renew(patient_id=patient_id, token=token):  # renew between sessions
            return Outcome.BUSY  # our lease lapsed and another delivery holds the patient now
    return outcome


def _reconnect_if_dropped() -> None:
    """After the database dropped this connection, the next query opens a new one, as the next request
    or task would (a connection that merely saw an error in a transaction is left alone)."""
    if connection.connection is not None and connection.errors_occurred and not connection.is_usable():
        connection.close()


def _process_guarded(*, session: Session, engine: str | None, final_attempt: bool) -> None:
    try:
        session_process(session=session, engine=engine)
    except (OperationalError, InterfaceError) as exc:
        # The database went away (a restart, a failover, a cut connection): what the step wrote was in
        # transactions that never committed, and the session could not even be marked. Not the session's
        # fault, so never FAILED: retried like any outage (the task with backoff, else the sweep).
        logger.warning("pipeline session %s: database unavailable (%s)", session.pk, exc.__class__.__name__)
        raise RetryableError("the database was unavailable") from exc
    except RetryableError as exc:
        if not final_attempt:
            raise
        logger.warning("pipeline session %s failed after retries: %s", session.pk, exc.__class__.__name__)
        _set_status(session, Session.Pipeline.FAILED, f"gave up after retries: {exc.message}")
    except PermanentError as exc:
        logger.warning("pipeline session %s failed: %s", session.pk, exc.__class__.__name__)
        _set_status(session, Session.Pipeline.FAILED, exc.message)
    except Exception as exc:  # an engine bug must not wedge the queue; the message carries no text
        logger.error("pipeline session %s crashed: %s", session.pk, exc.__class__.__name__)
        _set_status(session, Session.Pipeline.FAILED, f"internal error ({exc.__class__.__name__}); retry or report it")


def pipeline_patient_drain(*, patient_id: int, engine: str | None = None, on_session: Callable[[Session], None] | None = None) -> Outcome:
    """In-process, in order, no broker: used by replay, evaluation and the CLI without a worker."""
    token = f"drain-{uuid.uuid4().hex}"
    while True:
        outcome = pipeline_patient_advance(patient_id=patient_id, token=token, engine=engine, budget=3600, on_session=on_session)
        if outcome != Outcome.MORE:
            return outcome


def pipeline_enqueue(*, patient_id: int) -> bool:
    """Send one advance message; a broker outage is logged (ids only) and left to the sweep."""
    try:
        pipeline_patient_advance_task.apply_async(
            (patient_id,), retry=True, retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
        )
    except Exception as exc:  # kombu raises several types for a dead broker; none may lose the upload
        logger.error("pipeline enqueue for patient %s failed (%s); the sweep will retry", patient_id, exc.__class__.__name__)
        return False
    return True


def pipeline_kick(*, patient_id: int) -> None:
    """Enqueue after commit. Not `.delay_on_commit()`: its errors could not be caught here, and an
    exception after the commit would turn a stored upload into a 500 for the uploader."""
    transaction.on_commit(lambda: pipeline_enqueue(patient_id=patient_id))


def pipeline_sweep() -> int:
    """Enqueue every patient with pending work whose lease is free or stale; returns how many."""
    now = timezone.now()
    patient_ids = set(Session.objects.filter(pipeline_status__in=ACTIVE, withdrawn_at__isnull=True).values_list("patient_id", flat=True))
    held = set(PatientPipeline.objects.filter(patient_id__in=patient_ids, lease_until__gte=now).values_list("patient_id", flat=True))
    sent = 0
    for patient_id in sorted(patient_ids - held):
        sent += int(pipeline_enqueue(patient_id=patient_id))
    return sent


@receiver(sessions_pending, dispatch_uid="pipeline-sessions-pending")
def _on_sessions_pending(sender: object, *, patient_id: int, **kwargs: object) -> None:
    pipeline_kick(patient_id=patient_id)


@receiver(session_withdrawn, dispatch_uid="pipeline-session-withdrawn")
def _on_session_withdrawn(sender: object, *, session: Session, user: object = None, reason: str = "", **kwargs: object) -> int:
    """Returns how many memories were revoked, for the withdrawal's audit row (the ledger's own row
    counts findings, items and retractions too)."""
    from reconcile_app.ledger.services import session_revoke

    revocation = session_revoke(session=session, user=user,  # type: ignore[arg-type]
                                reason=f"consent withdrawn{': ' + reason[:100] if reason else ''}")
    return revocation.memories


# --- Celery tasks: ids in, one service call, retries only for RetryableError ------------------------


@shared_task(
    bind=True,
    name="reconcile_app.pipeline.pipeline_patient_advance_task",
    acks_late=True,  # redelivered after a lost worker; safe because every step is idempotent
    reject_on_worker_lost=True,
    autoretry_for=(RetryableError,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=5,
    ignore_result=True,
)
def pipeline_patient_advance_task(self, patient_id: int, budget: float | None = None, chain: bool = True) -> str:  # type: ignore[no-untyped-def]
    """`budget` and `chain` let a caller run it in its own process session by session (the CLI's
    --inline); messages from the broker use the defaults."""
    # The task id is the lease token: a redelivered or retried message reclaims its own lease.
    token = self.request.id or uuid.uuid4().hex
    outcome = pipeline_patient_advance(
        patient_id=patient_id, token=token, final_attempt=self.request.retries >= self.max_retries, budget=budget,
        heartbeat=not self.request.is_eager,  # eager: runs inside the caller, which cannot die apart from it
    )
    if outcome == Outcome.MORE and chain:
        pipeline_enqueue(patient_id=patient_id)
    return str(outcome)


@shared_task(name="reconcile_app.pipeline.pipeline_sweep_task", ignore_result=True)
def pipeline_sweep_task() -> int:
    """Beat safety net: pending work whose message was lost (broker outage, dead worker) is sent again."""
    return pipeline_sweep()
