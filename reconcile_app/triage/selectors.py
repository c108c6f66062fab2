"""Reads of triage: the queue (filters, keyset pages, counts), a finding's side-by-side view, the dashboard."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone as dt_timezone
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import BooleanField, Case, Count, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import TruncWeek
from django.utils import timezone

from reconcile_app.fhir.clinical import ClinicalEntry, safety_context
from reconcile_app.fhir.models import Patient
from reconcile_app.fhir.selectors import clinical_record_for
from reconcile_app.narrative.models import Memory
from reconcile_app.narrative.selectors import memory_history
from reconcile_app.reconciliation.models import Finding
from reconcile_app.transcripts.models import Turn

from .display import entry_view
from .models import CLOSED_STATUSES, OPEN_STATUSES, RoutingRule, TriageAlert, TriageEvent, TriageItem, TriageQuote, WriteBack
from .routing import RuleSpec

EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
PAGE_SIZE = 50
DUE_SOON = timedelta(hours=4)
TABLE = TriageItem._meta.db_table


# --- cursor ---------------------------------------------------------------------------------


def _micros(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1)


def _from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def cursor_for(item: TriageItem, sort: str) -> str:
    if sort == "urgency":
        return f"{item.band}.{_micros(item.created_at)}.{item.pk}"
    return f"{_micros(item.created_at)}.{item.pk}"


def _after(qs: QuerySet[TriageItem], sort: str, cursor: str) -> QuerySet[TriageItem]:
    """Keyset: a row comparison that walks the sort index from the cursor (no OFFSET)."""
    parts = [int(p) for p in cursor.split(".")]
    adapt = connection.ops.adapt_datetimefield_value
    if sort == "urgency" and len(parts) == 3:
        sql = f'("{TABLE}"."band", "{TABLE}"."created_at", "{TABLE}"."id") > (%s, %s, %s)'
        params: list[Any] = [parts[0], adapt(_from_micros(parts[1])), parts[2]]
    elif sort in ("oldest", "newest") and len(parts) == 2:
        op = ">" if sort == "oldest" else "<"
        sql = f'("{TABLE}"."created_at", "{TABLE}"."id") {op} (%s, %s)'
        params = [adapt(_from_micros(parts[0])), parts[1]]
    else:
        return qs
    return qs.filter(RawSQL(sql, params, output_field=BooleanField()))


ORDERINGS = {
    "urgency": ("band", "created_at", "id"),
    "oldest": ("created_at", "id"),
    "newest": ("-created_at", "-id"),
}


# --- queue ----------------------------------------------------------------------------------


def _status_filter(qs: QuerySet[TriageItem], status: str) -> QuerySet[TriageItem]:
    if status in ("", "open"):
        return qs.filter(status__in=OPEN_STATUSES)
    if status == "closed":
        return qs.filter(status__in=CLOSED_STATUSES)
    if status == "all":
        return qs
    return qs.filter(status=status)


def triage_item_filter(*, filters: dict[str, Any], user: User | None, now: datetime | None = None, skip_status: bool = False) -> QuerySet[TriageItem]:
    """The queue's WHERE clause from a validated QueueFilterForm's cleaned_data."""
    now = now or timezone.now()
    qs = TriageItem.objects.all()
    if not skip_status:
        qs = _status_filter(qs, filters.get("status") or "open")
    if filters.get("severity"):
        qs = qs.filter(severity=filters["severity"])
    if filters.get("safety") == "yes":
        qs = qs.filter(safety_critical=True)
    elif filters.get("safety") == "no":
        qs = qs.filter(safety_critical=False)
    if filters.get("kind"):
        qs = qs.filter(kind=filters["kind"])
    if filters.get("category"):
        qs = qs.filter(category=filters["category"])
    if filters.get("resource_type"):
        qs = qs.filter(resource_types__contains=f"|{filters['resource_type']}|")
    if filters.get("patient"):
        qs = qs.filter(patient_id__in=filters["patient"])
    if filters.get("queue"):
        qs = qs.filter(queue=filters["queue"])
    if filters.get("mine") and user is not None:
        qs = qs.filter(assignee=user)
    age = filters.get("age")
    if age == "lt1d":
        qs = qs.filter(created_at__gte=now - timedelta(days=1))
    elif age == "1to7d":
        qs = qs.filter(created_at__lt=now - timedelta(days=1), created_at__gte=now - timedelta(days=7))
    elif age == "gt7d":
        qs = qs.filter(created_at__lt=now - timedelta(days=7))
    sla = filters.get("sla")
    if sla == "breached":
        qs = qs.filter(sla_due_at__lt=now)
    elif sla == "due_soon":
        qs = qs.filter(sla_due_at__gte=now, sla_due_at__lt=now + DUE_SOON)
    elif sla == "ok":
        qs = qs.filter(Q(sla_due_at__gte=now + DUE_SOON) | Q(sla_due_at__isnull=True))
    return qs


@dataclass
class QueuePage:
    items: list[TriageItem]
    next_cursor: str = ""
    sort: str = "urgency"


def triage_queue_page(*, filters: dict[str, Any], user: User | None, limit: int = PAGE_SIZE, now: datetime | None = None) -> QueuePage:
    sort = filters.get("sort") or "urgency"
    qs = triage_item_filter(filters=filters, user=user, now=now)
    if filters.get("after"):
        qs = _after(qs, sort, filters["after"])
    rows = list(
        qs.select_related("patient", "assignee")
        .only("id", "finding_id", "patient__id", "patient__display_name", "patient__fhir_id", "assignee__id", "assignee__username",
              "assignee__first_name", "assignee__last_name", "kind", "severity", "safety_critical", "band", "category",
              "resource_types", "created_at", "status", "queue", "priority", "sla_due_at", "summary", "quote_count")
        .order_by(*ORDERINGS[sort])[: limit + 1]
    )
    next_cursor = cursor_for(rows[limit - 1], sort) if len(rows) > limit else ""
    return QueuePage(items=rows[:limit], next_cursor=next_cursor, sort=sort)


COUNTS_VERSION_KEY = "triage:counts:version"


def counts_invalidate() -> None:
    """Called by every write that changes an item: cached facet counts are keyed by this version."""
    try:
        cache.incr(COUNTS_VERSION_KEY)
    except ValueError:  # not set yet (or evicted)
        cache.set(COUNTS_VERSION_KEY, 1, None)


def _counts_key(filters: dict[str, Any], user: User | None, now: datetime) -> str:
    version = cache.get_or_set(COUNTS_VERSION_KEY, 1, None)
    # The cursor and the sort do not change counts; "mine" does, per user; SLA and age buckets
    # move with time, so the key also carries the minute.
    relevant = sorted((k, str(v)) for k, v in filters.items() if k not in ("after", "sort") and v not in (None, "", False))
    owner = user.pk if user is not None and filters.get("mine") else 0
    digest = hashlib.sha256(repr((relevant, owner)).encode()).hexdigest()[:24]
    return f"triage:counts:{version}:{now:%Y%m%d%H%M}:{digest}"


def triage_queue_counts(*, filters: dict[str, Any], user: User | None, now: datetime | None = None) -> dict[str, Any]:
    """Counts per filter value over the current result, in one aggregate query. Cached for a few
    seconds and invalidated by any triage write, because counting 25,000 open items on every
    keystroke is the one part of the queue whose cost grows with the data."""
    now = now or timezone.now()
    ttl = getattr(settings, "TRIAGE_COUNTS_CACHE_SECONDS", 30)
    key = _counts_key(filters, user, now) if ttl else ""
    if key:
        cached = cache.get(key)
        if cached is not None:
            return cached
    counts = _counts_compute(filters=filters, user=user, now=now)
    if key:
        cache.set(key, counts, ttl)
    return counts


FACET_CATEGORIES = ("medication", "condition", "allergy", "procedure", "immunization", "observation", "careplan")


def _counts_compute(*, filters: dict[str, Any], user: User | None, now: datetime) -> dict[str, Any]:
    """Every facet's counts from one GROUP BY over the result's small columns: a few hundred groups
    (band x kind x safety x category x status x SLA bucket x age bucket), added up here. One pass over
    the open set read from the covering index, instead of a score of FILTER clauses evaluated per row,
    so live counts (no cache) fit the page's budget at 100,000 findings."""
    qs = triage_item_filter(filters=filters, user=user, now=now)
    sla = Case(When(sla_due_at__lt=now, then=Value(0)), When(sla_due_at__lt=now + DUE_SOON, then=Value(1)), default=Value(2),
               output_field=IntegerField())
    age = Case(When(created_at__gte=now - timedelta(days=1), then=Value(0)), When(created_at__lt=now - timedelta(days=7), then=Value(2)),
               default=Value(1), output_field=IntegerField())
    mine = (Case(When(assignee_id=user.pk, then=Value(1)), default=Value(0), output_field=IntegerField())
            if user is not None else Value(0, output_field=IntegerField()))
    grouped = (qs.order_by().annotate(sla_bucket=sla, age_bucket=age, mine_flag=mine)
               .values("band", "kind", "safety_critical", "category", "status", "sla_bucket", "age_bucket", "mine_flag")
               .annotate(n=Count("band")))  # COUNT(band): a key of the covering index, never null
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # The open set is read from a covering partial index (index-only scan, ~25,000 entries
            # at 100,000 findings). PostgreSQL otherwise prefers a parallel seq scan of the whole
            # table, whose worker start-up costs more than it saves here (plans in bench/queue_p95.py).
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        rows = list(grouped)
    counts: dict[str, Any] = {key: 0 for key in (
        "total", "safety_yes", "sla_breached", "sla_due_soon", "age_lt1d", "age_gt7d", "kind_gap", "severity_high",
        "severity_medium", *(f"category_{c}" for c in FACET_CATEGORIES))}
    status = {s: 0 for s in OPEN_STATUSES}
    mine_total = 0
    for row in rows:
        n = row["n"]
        counts["total"] += n
        counts["safety_yes"] += n if row["safety_critical"] else 0
        counts["sla_breached"] += n if row["sla_bucket"] == 0 else 0
        counts["sla_due_soon"] += n if row["sla_bucket"] == 1 else 0
        counts["age_lt1d"] += n if row["age_bucket"] == 0 else 0
        counts["age_gt7d"] += n if row["age_bucket"] == 2 else 0
        counts["kind_gap"] += n if row["kind"] == "gap" else 0
        # Severity through the urgency band: one small-integer column instead of a text compare.
        counts["severity_high"] += n if row["band"] in (0, 3) else 0
        counts["severity_medium"] += n if row["band"] in (1, 4) else 0
        if row["category"] in FACET_CATEGORIES:
            counts[f"category_{row['category']}"] += n
        if row["status"] in status:
            status[row["status"]] += n
        mine_total += n if row["mine_flag"] else 0
    if user is not None:
        counts["mine"] = mine_total
    # The complements need no extra work in the database.
    counts["safety_no"] = counts["total"] - counts["safety_yes"]
    counts["severity_low"] = counts["total"] - counts["severity_high"] - counts["severity_medium"]
    counts["kind_contradiction"] = counts["total"] - counts["kind_gap"]
    counts["sla_ok"] = counts["total"] - counts["sla_breached"] - counts["sla_due_soon"]
    counts["age_1to7d"] = counts["total"] - counts["age_lt1d"] - counts["age_gt7d"]
    counts["status"] = status
    return counts


BIRTH_DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y")


def _birth_date(text: str) -> date | None:
    for fmt in BIRTH_DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def patient_search(*, q: str, limit: int = 50) -> list[Patient]:
    """Patients whose name contains every word of `q`, or whose MRN (any identifier value) is `q`,
    or who were born on the date `q`; the queue filters by their ids."""
    q = " ".join(q.split())
    born = _birth_date(q)
    if born is not None:
        return list(Patient.objects.filter(birth_date=born).order_by("display_name", "pk")[:limit])
    by_name = Patient.objects.all()
    for word in q.split():
        by_name = by_name.filter(display_name__icontains=word)
    found = {p.pk: p for p in by_name.order_by("display_name", "pk")[:limit]}
    # Identifiers are JSON: a text match narrows the rows, an exact value match decides.
    for p in Patient.objects.filter(identifiers__icontains=q).order_by("display_name", "pk")[:limit]:
        if any(str(i.get("value", "")).casefold() == q.casefold() for i in p.identifiers or [] if isinstance(i, dict)):
            found.setdefault(p.pk, p)
    return list(found.values())[:limit]


def patients_by_ids(*, ids: list[int]) -> list[Patient]:
    return list(Patient.objects.filter(pk__in=ids).order_by("display_name", "pk"))


def triage_items_for_ids(*, ids: list[int]) -> QuerySet[TriageItem]:
    """Items named by any of their quotes' finding ids (the queue names an item by its first finding)."""
    return TriageItem.objects.filter(quotes__finding_id__in=ids).distinct().select_related("patient")


def triage_patient_items(*, patient_pk: int, include_closed: bool = True) -> QuerySet[TriageItem]:
    qs = TriageItem.objects.filter(patient_id=patient_pk)
    if not include_closed:
        qs = qs.filter(status__in=OPEN_STATUSES)
    return qs.select_related("patient", "assignee", "finding").order_by("band", "created_at", "id")


def triage_overdue(*, limit: int = 10, now: datetime | None = None) -> list[TriageItem]:
    """Open items past their SLA, most urgent first: the dashboard's list."""
    now = now or timezone.now()
    return list(
        TriageItem.objects.filter(status__in=OPEN_STATUSES, sla_due_at__lt=now)
        .select_related("patient", "assignee").order_by("band", "sla_due_at", "id")[:limit]
    )


def writeback_for(*, item: TriageItem) -> WriteBack | None:
    return WriteBack.objects.filter(item=item).first()


def alerts_open(*, limit: int = 20) -> list[TriageAlert]:
    """Unacknowledged alerts, cached under the same version as the counts: routing (which raises
    alerts), escalation and acknowledgement all invalidate it."""
    key = f"triage:alerts:{cache.get_or_set(COUNTS_VERSION_KEY, 1, None)}"
    alerts = cache.get(key)
    if alerts is None:
        alerts = list(TriageAlert.objects.filter(acknowledged_at__isnull=True, closed_at__isnull=True)
                      .select_related("item", "item__patient")[:limit])
        cache.set(key, alerts, getattr(settings, "TRIAGE_COUNTS_CACHE_SECONDS", 30))
    return alerts


def nurse_choices() -> list[tuple[int, str]]:
    """(pk, username) of everyone who can be assigned; changes rarely, so cached for a minute."""
    choices = cache.get("triage:assignees")
    if choices is None:
        choices = list(
            User.objects.filter(groups__name__in=("nurse", "admin"), is_active=True).distinct().order_by("username").values_list("pk", "username")
        )
        cache.set("triage:assignees", choices, 60)
    return choices


# --- finding detail -------------------------------------------------------------------------


@dataclass
class TurnView:
    turn: Turn
    highlighted: bool


@dataclass
class QuoteView:
    finding_id: int
    session: str
    said_at: datetime
    quote: str
    summary: str
    severity: str
    safety_critical: bool
    shown: bool


@dataclass
class FindingDetail:
    item: TriageItem
    finding: Finding
    memory: Memory
    turns: list[TurnView]
    history: list[Memory]
    cited: list[dict[str, Any]]
    safety: Any
    earlier: list[TriageItem]
    events: list[TriageEvent]
    notes: list[Any]
    quotes: list[QuoteView] = field(default_factory=list)
    writeback: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


CONTEXT_TURNS = 2


def item_quotes(*, item: TriageItem, shown_finding_id: int | None = None) -> list[QuoteView]:
    """Every quote of the item, newest first, each with its session and the time it was said."""
    rows = (
        TriageQuote.objects.filter(item=item)
        .select_related("finding__memory", "finding__session")
        .order_by("-finding__memory__mention_time", "-finding_id")
    )
    return [
        QuoteView(finding_id=q.finding_id, session=q.finding.session.external_id, said_at=q.finding.memory.mention_time,
                  quote=q.finding.memory.quote, summary=q.summary, severity=q.finding.severity,
                  safety_critical=q.finding.safety_critical, shown=q.finding_id == shown_finding_id)
        for q in rows
    ]


def finding_detail(*, item: TriageItem, finding_pk: int | None = None) -> FindingDetail:
    """The item with one of its quotes side by side with the record (the one the URL names)."""
    shown = finding_pk or item.finding_id
    finding = (Finding.objects.select_related("memory__turn", "memory__session", "session", "snapshot", "run")
               .defer("snapshot__resources").get(pk=shown))  # the record comes from the per-snapshot cache
    memory = finding.memory
    quoted = set(memory.turn_ids or []) | {memory.turn.external_id}
    seqs = [t.seq for t in Turn.objects.filter(session_id=memory.session_id, external_id__in=quoted)] or [memory.turn.seq]
    turns = [
        TurnView(turn=t, highlighted=t.external_id in quoted)
        for t in Turn.objects.filter(session_id=memory.session_id, seq__gte=min(seqs) - CONTEXT_TURNS, seq__lte=max(seqs) + CONTEXT_TURNS).order_by("seq")
    ]
    record = clinical_record_for(snapshot=finding.snapshot)
    cited = []
    for c in finding.citations or []:
        if not isinstance(c, dict):
            continue
        entry: ClinicalEntry | None = record.get(str(c.get("resourceType", "")), str(c.get("id", "")))
        cited.append(entry_view(citation=c, entry=entry))
    keys = {(c.get("resourceType"), c.get("id")) for c in finding.citations or [] if isinstance(c, dict)}
    earlier = [
        other
        for other in TriageItem.objects.filter(patient_id=item.patient_id, finding__isnull=False).exclude(pk=item.pk)
        .select_related("finding").order_by("-created_at")[:200]
        if keys & {(c.get("resourceType"), c.get("id")) for c in other.finding.citations or [] if isinstance(c, dict)}
    ]
    return FindingDetail(
        item=item,
        finding=finding,
        memory=memory,
        turns=turns,
        history=memory_history(memory=memory),
        cited=cited,
        safety=safety_context(record),
        earlier=earlier[:20],
        events=list(item.events.select_related("actor")),
        notes=list(item.notes.select_related("author")),
        quotes=item_quotes(item=item, shown_finding_id=finding.pk),
        writeback=WriteBack.objects.filter(item=item).first(),
    )


# --- routing rule preview -------------------------------------------------------------------


def rule_preview(*, spec: RuleSpec, limit: int = 20) -> tuple[int, list[TriageItem]]:
    """Current open items the rule's criteria catch (the same test as routing.rule_matches)."""
    qs = TriageItem.objects.filter(status__in=OPEN_STATUSES)
    if spec.match_kind:
        qs = qs.filter(kind=spec.match_kind)
    if spec.match_severity:
        qs = qs.filter(severity=spec.match_severity)
    if spec.match_safety == "yes":
        qs = qs.filter(safety_critical=True)
    elif spec.match_safety == "no":
        qs = qs.filter(safety_critical=False)
    if spec.match_category:
        qs = qs.filter(category=spec.match_category)
    if spec.match_resource_type:
        qs = qs.filter(resource_types__contains=f"|{spec.match_resource_type}|")
    return qs.count(), list(qs.select_related("patient").order_by("band", "created_at", "id")[:limit])


def routing_rule_list() -> QuerySet[RoutingRule]:
    return RoutingRule.objects.annotate(open_items=Count("items", filter=Q(items__status__in=OPEN_STATUSES))).order_by("order", "id")


# --- dashboard ------------------------------------------------------------------------------


AGE_BUCKETS = (("< 1 day", 0, 1), ("1-3 days", 1, 3), ("3-7 days", 3, 7), ("> 7 days", 7, None))


def dashboard_stats(*, now: datetime | None = None, weeks: int = 8) -> dict[str, Any]:
    now = now or timezone.now()
    open_qs = TriageItem.objects.filter(status__in=OPEN_STATUSES)
    aggregates = {}
    for sev in ("high", "medium", "low"):
        for i, (_, lo, hi) in enumerate(AGE_BUCKETS):
            cond = Q(severity=sev, created_at__lte=now - timedelta(days=lo))
            if hi is not None:
                cond &= Q(created_at__gt=now - timedelta(days=hi))
            aggregates[f"{sev}_{i}"] = Count("id", filter=cond)
    aggregates["breached"] = Count("id", filter=Q(sla_due_at__lt=now))
    aggregates["safety"] = Count("id", filter=Q(safety_critical=True))
    aggregates["total"] = Count("id")
    raw = open_qs.aggregate(**aggregates)
    open_by = {sev: {label: raw[f"{sev}_{i}"] for i, (label, _, _) in enumerate(AGE_BUCKETS)} for sev in ("high", "medium", "low")}

    since = now - timedelta(days=30)
    decided = TriageItem.objects.filter(decided_at__gte=since).aggregate(
        on_time=Count("id", filter=Q(decided_at__lte=F("sla_due_at"))),
        late=Count("id", filter=Q(decided_at__gt=F("sla_due_at"))),
    )
    sla_total = decided["on_time"] + decided["late"]

    start = now - timedelta(weeks=weeks)
    weekly: dict[Any, dict[str, int]] = defaultdict(lambda: {"confirm": 0, "dismiss": 0, "resolve": 0})
    for row in (
        TriageEvent.objects.filter(at__gte=start, action__in=("confirm", "dismiss", "resolve"))
        .annotate(week=TruncWeek("at")).values("week", "action").annotate(n=Count("id"))
    ):
        week = row["week"].date() if hasattr(row["week"], "date") else row["week"]
        weekly[week][row["action"]] += row["n"]

    precision = []
    for row in (
        TriageItem.objects.exclude(category="").values("category")
        .annotate(
            confirmed=Count("id", filter=Q(status__in=("confirmed", "resolved"))),
            dismissed=Count("id", filter=Q(status="dismissed")),
        ).order_by("category")
    ):
        decided_n = row["confirmed"] + row["dismissed"]
        precision.append({
            "category": row["category"], "confirmed": row["confirmed"], "dismissed": row["dismissed"],
            "precision": (row["confirmed"] / decided_n) if decided_n else None,
        })
    return {
        "open_by": open_by,
        "age_labels": [label for label, _, _ in AGE_BUCKETS],
        "open_total": raw["total"],
        "open_safety": raw["safety"],
        "open_breached": raw["breached"],
        "sla_on_time": decided["on_time"],
        "sla_late": decided["late"],
        "sla_compliance": (decided["on_time"] / sla_total) if sla_total else None,
        "weekly": sorted(weekly.items()),
        "precision": precision,
    }

