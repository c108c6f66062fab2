"""Reads behind the context pack, each already narrowed to one patient and to what one platform may see."""
from __future__ import annotations

from datetime import date, datetime
from functools import lru_cache

from django.db.models import F, OuterRef, QuerySet, Subquery

from reconcile_app.fhir.models import Patient, RecordSnapshot
from reconcile_app.fhir.selectors import clinical_record_for
from reconcile_app.narrative.models import ExtractionRun, Memory
from reconcile_app.transcripts.models import CoachingPlatform, Session
from reconcile_app.triage.models import OPEN_STATUSES, TriageQuote

from .pack import DiscrepancyFacts, MemoryFacts, RecordPart, record_part

MEMORY_FIELDS = ("category", "subject", "subject_relation", "assertion", "attributes", "content", "quote", "event_time_text",
                 "event_start", "event_end", "mention_time", "created_at", "session__external_id", "session__started_at")


def visible_namespaces(*, platform: CoachingPlatform) -> tuple[str, str]:
    """The platform's own sessions and the care team's (uploads by people and the CLI), never another platform's."""
    return "", f"platform:{platform.pk}"


@lru_cache(maxsize=64)
def _record_part(snapshot_id: int, content_sha256: str, version: int, fetched_at: datetime, today: date) -> RecordPart:
    head = RecordSnapshot(pk=snapshot_id, content_sha256=content_sha256)
    return record_part(clinical_record_for(snapshot=head), snapshot_version=version, fetched_at=fetched_at, today=today)


def record_part_for(*, snapshot: RecordSnapshot, today: date) -> RecordPart:
    """Snapshots are immutable: the safety section and its lines are derived once per snapshot (and day, for age)."""
    return _record_part(snapshot.pk, snapshot.content_sha256, snapshot.version, snapshot.fetched_at, today)


def visible_sessions(*, patient: Patient, platform: CoachingPlatform) -> QuerySet[Session]:
    """The patient's sessions the platform may see: its own and the care team's, never another platform's, never a
    withdrawn one (withdrawal deletes or revokes their memories; these filters hold whichever the ledger does).
    Lazy: the queries below use it as a subquery, so it costs no round trip of its own."""
    return (Session.objects.filter(patient=patient, namespace__in=visible_namespaces(platform=platform), withdrawn_at__isnull=True,
                                   upload__sealed_at__isnull=True)
            .exclude(pipeline_status=Session.Pipeline.WITHDRAWN).values("id"))


def memory_keys(*, patient: Patient, sessions: QuerySet[Session]) -> tuple[tuple[int, str], ...]:
    """(id, content hash) of the current, affirmed memories of each visible session's latest finished extraction
    run, in one query. A memory row's content never changes in place, so these keys name the pack's memories."""
    done = ExtractionRun.objects.filter(status=ExtractionRun.Status.DONE)
    newest = done.filter(session=OuterRef("session")).order_by("-finished_at", "-id").values("id")[:1]
    latest_runs = done.filter(session__in=sessions).annotate(newest=Subquery(newest)).filter(id=F("newest")).values("id")
    return tuple(
        Memory.objects.filter(patient=patient, status=Memory.Status.CURRENT, assertion="affirmed", run_id__in=latest_runs)
        .order_by("id").values_list("id", "content_sha256")
    )


def memory_facts_for_ids(*, ids: list[int]) -> list[MemoryFacts]:
    rows = Memory.objects.filter(id__in=ids).values_list(*MEMORY_FIELDS)
    return [
        MemoryFacts(category=r[0], subject=r[1], subject_relation=r[2], assertion=r[3], attributes=r[4] or {}, content=r[5],
                    quote=r[6], event_time_text=r[7], event_start=r[8], event_end=r[9], mention_time=r[10], created_at=r[11],
                    session_id=r[12], session_started_at=r[13])
        for r in rows
    ]


def memory_facts_for_platform(*, patient: Patient, platform: CoachingPlatform) -> list[MemoryFacts]:
    """The memories a platform's pack holds for the patient (see memory_keys)."""
    keys = memory_keys(patient=patient, sessions=visible_sessions(patient=patient, platform=platform))
    return memory_facts_for_ids(ids=[k[0] for k in keys])


def discrepancy_facts(*, patient: Patient, sessions: QuerySet[Session]) -> tuple[DiscrepancyFacts, ...]:
    """Open triage items, each told by its newest quote from a visible session (an item quoted only in another
    platform's sessions is not this platform's to hear about; a revoked memory's quote is never told)."""
    quotes = (
        TriageQuote.objects.filter(item__patient=patient, item__status__in=OPEN_STATUSES, finding__session_id__in=sessions)
        .exclude(finding__memory__status=Memory.Status.REVOKED)
        .order_by("item_id", "-joined_at", "-id")
        .values_list("item_id", "summary", "joined_at", "item__kind", "item__category", "item__severity", "item__safety_critical",
                     "item__status", "item__created_at")
    )
    out: dict[int, DiscrepancyFacts] = {}
    for item_id, summary, joined_at, kind, category, severity, safety_critical, status, created_at in quotes:
        if item_id not in out:  # the newest visible quote tells the item
            out[item_id] = DiscrepancyFacts(kind=kind, category=category, severity=severity, safety_critical=safety_critical,
                                            status=status, summary=summary, since=created_at, updated_at=max(created_at, joined_at))
    return tuple(out.values())


def discrepancy_facts_for_platform(*, patient: Patient, platform: CoachingPlatform) -> tuple[DiscrepancyFacts, ...]:
    return discrepancy_facts(patient=patient, sessions=visible_sessions(patient=patient, platform=platform))
