"""Triage: one work item per discrepancy (with every quote that raised it), its append-only workflow log,
routing rules, alerts and write-backs."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from reconcile_app.core.models import TimeStampedModel

OPEN_STATUSES = ("new", "in_review", "escalated")
# Closed: decided by a person, or withdrawn with its source (consent), never reopened.
CLOSED_STATUSES = ("confirmed", "dismissed", "resolved", "withdrawn")


class RoutingAction(models.TextChoices):
    ALERT_CARE_TEAM = "alert_care_team", "Alert the care team (in-app and email)"
    ASK_COACH_CLARIFY = "ask_coach_clarify", "Ask the coach to clarify with the patient"
    LOG_NEXT_VISIT = "log_next_visit", "Log for the next visit"


class TriageItem(models.Model):
    """A discrepancy under review. Finding columns are copied here so the queue's filters and sort
    never join the findings table (100,000 rows must stay fast).

    Reconciliation writes one finding per memory per session; an open item gathers every finding
    of the same patient, concept and kind as one of its quotes (TriageQuote). `finding` is the
    item's first finding: its id names the item in URLs, alerts and CDS cards, so it stays put
    while quotes join (it moves to another quote only when consent for its session is withdrawn)."""

    class Status(models.TextChoices):
        NEW = "new", "New"
        IN_REVIEW = "in_review", "In review"
        CONFIRMED = "confirmed", "Confirmed"
        DISMISSED = "dismissed", "Dismissed"
        RESOLVED = "resolved", "Resolved"
        ESCALATED = "escalated", "Escalated"
        # Every quote's source was withdrawn (consent) before anyone decided: closed, kept, no words left.
        WITHDRAWN = "withdrawn", "Withdrawn (consent)"

    class DismissReason(models.TextChoices):
        ALREADY_KNOWN = "already_known", "Already known"
        PATIENT_MISUNDERSTOOD = "patient_misunderstood", "Patient misunderstood"
        NOT_RELEVANT = "not_clinically_relevant", "Not clinically relevant"
        DUPLICATE = "duplicate", "Duplicate"
        OTHER = "other", "Other"

    class ActionStatus(models.TextChoices):
        NONE = "", "None"
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        RETRYING = "retrying", "Retrying"
        FAILED = "failed", "Failed"
        # Nothing is set up to carry the action (no webhook, no email address): not an error.
        NOT_CONFIGURED = "not_configured", "Not configured"

    # SET_NULL, not CASCADE: withdrawing one session's finding must not take the other quotes with
    # it; the quote's post_delete receiver moves `finding` to a remaining quote or deletes the item.
    finding = models.OneToOneField("reconciliation.Finding", null=True, on_delete=models.SET_NULL, related_name="triage_item")
    patient = models.ForeignKey("fhir.Patient", on_delete=models.CASCADE, related_name="triage_items")
    kind = models.CharField(max_length=25)
    severity = models.CharField(max_length=6)
    severity_rank = models.PositiveSmallIntegerField()  # low 1, medium 2, high 3
    safety_critical = models.BooleanField(default=False)
    # The default sort (safety first, then severity, then age) folded into one ascending
    # column: 0 = safety-critical high … 5 = low. One column lets the keyset cursor be a
    # plain row comparison `(band, created_at, id) > (…)` that walks one index in order.
    band = models.PositiveSmallIntegerField()
    category = models.CharField(max_length=20, blank=True)
    # "|MedicationRequest|Condition|": portable across SQLite and PostgreSQL, filtered with
    # `contains="|Type|"`; the cited types of one finding are few.
    resource_types = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()  # the first finding's creation time: the age the queue shows
    # The normalised concept ("medication:metoprolol"); "" for memories that name nothing specific.
    concept_key = models.CharField(max_length=120, blank=True)
    summary = models.TextField(blank=True)  # the newest quote's one line: what was said, what the record says
    quote_count = models.PositiveSmallIntegerField(default=1)
    last_quoted_at = models.DateTimeField(null=True, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    queue = models.CharField(max_length=80, blank=True)
    priority = models.PositiveSmallIntegerField(default=3)
    sla_due_at = models.DateTimeField(null=True, blank=True)
    rule = models.ForeignKey("RoutingRule", null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="triage_items")
    claimed_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    dismiss_reason = models.CharField(max_length=30, choices=DismissReason.choices, blank=True)
    dismiss_text = models.CharField(max_length=300, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # A decided item whose source was withdrawn keeps its decision and is marked here.
    source_revoked_at = models.DateTimeField(null=True, blank=True)
    # The routing action's delivery (alert, clarification request), visible on the finding.
    action = models.CharField(max_length=20, choices=RoutingAction.choices, blank=True)
    action_status = models.CharField(max_length=20, choices=ActionStatus.choices, blank=True)
    action_attempts = models.PositiveSmallIntegerField(default=0)
    action_error = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # The queue's default page: open items in urgency order. Partial, so closed
            # items (the bulk after months of use) never bloat it.
            models.Index(fields=["band", "created_at", "id"], condition=Q(status__in=OPEN_STATUSES), name="triage_open_urgency_idx"),
            # Facet counts over the open set as an index-only scan (PostgreSQL; other databases
            # build it without the included columns).
            models.Index(fields=["band"], include=["status", "kind", "category", "safety_critical", "sla_due_at", "created_at", "assignee"],
                         condition=Q(status__in=OPEN_STATUSES), name="triage_open_facets_idx"),
            # Same order over every status (status filter = any/closed).
            models.Index(fields=["status", "band", "created_at", "id"], name="triage_status_urgency_idx"),
            # Facet counts of one closed status, or of the open set narrowed by resource type, as an
            # index-only scan (a sequential scan of the whole table before: bench/queue_p95.py).
            models.Index(fields=["status"], include=["band", "kind", "category", "safety_critical", "sla_due_at", "created_at",
                                                     "assignee", "resource_types"], name="triage_status_facets_idx"),
            # One patient's items (clinician view, patient filter, CDS Hooks).
            models.Index(fields=["patient", "status", "band"], name="triage_patient_idx"),
            # "Assigned to me" and the SLA sweep.
            models.Index(fields=["assignee", "status"], name="triage_assignee_idx"),
            models.Index(fields=["sla_due_at"], condition=Q(status__in=("new", "in_review")), name="triage_sla_open_idx"),
            # Newest-first sort.
            models.Index(fields=["-created_at", "-id"], name="triage_newest_idx"),
            # Routing: the open item a new quote of the same patient, kind and concept joins.
            models.Index(fields=["patient", "kind", "concept_key"], condition=Q(status__in=OPEN_STATUSES) & ~Q(concept_key=""),
                         name="triage_open_concept_idx"),
        ]

    def __str__(self) -> str:
        return f"Triage item #{self.pk} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def resource_type_list(self) -> list[str]:
        return [t for t in self.resource_types.split("|") if t]


class TriageQuote(models.Model):
    """One finding (one memory of one session) of an item: several sessions saying the same thing
    are one item with several quotes. Evaluation keeps scoring the findings, one per session."""

    class Closed(models.TextChoices):
        WITHDRAWN = "withdrawn", "Source withdrawn"
        RESOLVED_BY_EHR = "resolved_by_ehr_update", "Resolved by an EHR update"
        REEVALUATED = "reevaluated", "Re-evaluated"
        LATER_STATEMENT = "later_statement", "A later statement replaced it"
        CORRECTED = "memory_corrected", "The memory was corrected"
        OUTDATED = "memory_outdated", "The memory is outdated"

    item = models.ForeignKey(TriageItem, on_delete=models.CASCADE, related_name="quotes")
    finding = models.OneToOneField("reconciliation.Finding", on_delete=models.CASCADE, related_name="triage_quote")
    summary = models.TextField(blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)
    # A quote no longer counts for its open item once its finding stopped standing; it stays listed.
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_reason = models.CharField(max_length=30, choices=Closed.choices, blank=True)

    class Meta:
        ordering = ["-joined_at", "-id"]

    def __str__(self) -> str:
        return f"Quote of finding #{self.finding_id} in item #{self.item_id}"


class TriageEvent(models.Model):
    """Append-only workflow log of an item."""

    item = models.ForeignKey(TriageItem, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=30)
    from_status = models.CharField(max_length=10, blank=True)
    to_status = models.CharField(max_length=10, blank=True)
    note = models.CharField(max_length=300, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["action", "at"], name="triage_event_action_idx")]

    def save(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        if self.pk is not None:
            raise RuntimeError("triage events are append-only")
        super().save(*args, **kwargs)


class TriageNote(models.Model):
    item = models.ForeignKey(TriageItem, on_delete=models.CASCADE, related_name="notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class TriageAlert(models.Model):
    """An in-app alert to the care team, with an email copy through Django's email backend. The
    email is "sent" only when it went to at least one address; otherwise the alert says why not."""

    class Email(models.TextChoices):
        SENT = "sent", "Sent"
        NOT_SENT = "not_sent", "Not sent"
        FAILED = "failed", "Failed"

    item = models.ForeignKey(TriageItem, on_delete=models.CASCADE, related_name="alerts")
    reason = models.CharField(max_length=20)  # routed / sla_breach / escalated
    created_at = models.DateTimeField(auto_now_add=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    email_status = models.CharField(max_length=10, choices=Email.choices, blank=True)
    email_recipients = models.PositiveSmallIntegerField(default=0)
    email_note = models.CharField(max_length=200, blank=True)
    # Closed with its item's decision (confirmed, dismissed, resolved): nothing is left to alert about.
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_reason = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["created_at"], condition=Q(acknowledged_at__isnull=True, closed_at__isnull=True),
                                name="triage_alert_live_idx")]


class RoutingRule(TimeStampedModel):
    """First enabled rule (by `order`) that matches a new item sets its queue, priority, SLA and action."""

    Action = RoutingAction

    class Safety(models.TextChoices):
        ANY = "", "Any"
        YES = "yes", "Safety-critical only"
        NO = "no", "Not safety-critical"

    order = models.PositiveIntegerField(default=100)
    name = models.CharField(max_length=120)
    enabled = models.BooleanField(default=True)
    match_kind = models.CharField(max_length=25, blank=True, help_text="Blank matches any kind.")
    match_severity = models.CharField(max_length=6, blank=True, help_text="Blank matches any severity.")
    match_safety = models.CharField(max_length=3, choices=Safety.choices, blank=True)
    match_category = models.CharField(max_length=20, blank=True)
    match_resource_type = models.CharField(max_length=40, blank=True)
    queue = models.CharField(max_length=80)
    priority = models.PositiveSmallIntegerField(default=3, help_text="1 is most urgent.")
    sla_minutes = models.PositiveIntegerField(default=24 * 60)
    action = models.CharField(max_length=20, choices=Action.choices, default=Action.LOG_NEXT_VISIT)

    class Meta:
        ordering = ["order", "id"]

    def __str__(self) -> str:
        return self.name


class WriteBack(TimeStampedModel):
    """The confirmed finding written to the EHR; failures retry and stay visible here. PROTECT: the row
    is where the copy in the EHR is known, so nothing may delete it (a retraction hangs off it)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        DONE = "done", "Written"
        FAILED = "failed", "Failed"
        # The source was withdrawn before the write went out: it never will.
        CANCELLED = "cancelled", "Cancelled (source withdrawn)"

    item = models.OneToOneField(TriageItem, on_delete=models.PROTECT, related_name="writeback")
    # The finding whose words were written (the item's finding at the time of the write).
    finding = models.ForeignKey("reconciliation.Finding", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    base_url = models.URLField(max_length=400, blank=True)
    resource_type = models.CharField(max_length=30, blank=True)
    resource_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    written_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Write-back #{self.pk} ({self.status})"


class Retraction(TimeStampedModel):
    """Taking a written-back resource out of the EHR after its source was withdrawn: marked
    entered-in-error (the patient's words replaced), or deleted where the EHR allows it. Retried and
    visible like the write itself."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        DONE = "done", "Retracted"
        FAILED = "failed", "Failed"

    class Method(models.TextChoices):
        NONE = "", "Not yet"
        ENTERED_IN_ERROR = "entered-in-error", "Marked entered-in-error"
        DELETED = "deleted", "Deleted"
        ABSENT = "absent", "Already gone from the EHR"

    writeback = models.OneToOneField(WriteBack, on_delete=models.PROTECT, related_name="retraction")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    method = models.CharField(max_length=20, choices=Method.choices, blank=True)
    reason = models.CharField(max_length=120, blank=True)  # a code and ids, never clinical text
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    retracted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Retraction #{self.pk} ({self.status})"
