"""Forms of triage: the queue's GET filters, workflow steps, bulk actions and routing rules."""
from __future__ import annotations

from django import forms
from django.contrib.auth.models import User

from reconcile_app.reconciliation.types import FindingCategory

from .models import RoutingRule, TriageItem

RESOURCE_TYPES = ("Condition", "MedicationRequest", "MedicationStatement", "AllergyIntolerance", "Observation",
                  "Procedure", "Immunization", "CarePlan", "Encounter")
ANY = [("", "Any")]
STATUS_CHOICES = [("open", "Open"), ("new", "New"), ("in_review", "In review"), ("escalated", "Escalated"),
                  ("confirmed", "Confirmed"), ("dismissed", "Dismissed"), ("resolved", "Resolved"),
                  ("closed", "Closed (any)"), ("all", "All")]
SEVERITY_CHOICES = ANY + [("high", "High"), ("medium", "Medium"), ("low", "Low")]
SAFETY_CHOICES = ANY + [("yes", "Safety-critical"), ("no", "Not safety-critical")]
KIND_CHOICES = ANY + [("contradiction", "Contradiction"), ("gap", "Gap")]
CATEGORY_CHOICES = ANY + [(c.value, c.value.capitalize()) for c in FindingCategory]
RESOURCE_CHOICES = ANY + [(t, t) for t in RESOURCE_TYPES]
AGE_CHOICES = ANY + [("lt1d", "Under 1 day"), ("1to7d", "1-7 days"), ("gt7d", "Over 7 days")]
SLA_CHOICES = ANY + [("breached", "Breached"), ("due_soon", "Due within 4 h"), ("ok", "On track")]
SORT_CHOICES = [("urgency", "Safety, severity, age"), ("oldest", "Oldest first"), ("newest", "Newest first")]


class IdListField(forms.Field):
    """Repeated values (the queue's row checkboxes, its chosen patients) as a list of positive ints."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: object) -> list[int]:
        values = value if isinstance(value, (list, tuple)) else ([value] if value else [])
        try:
            ids = [int(v) for v in values]
        except (TypeError, ValueError) as exc:
            raise forms.ValidationError("Invalid id.") from exc
        if any(i < 1 for i in ids):
            raise forms.ValidationError("Invalid id.")
        return ids


# The latest moment a cursor may name: 9999-12-31, in microseconds since 1970 (datetime's own limit).
CURSOR_MAX_MICROS = 253402214400 * 10**6


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    severity = forms.ChoiceField(required=False, choices=SEVERITY_CHOICES)
    safety = forms.ChoiceField(required=False, choices=SAFETY_CHOICES, label="Safety")
    kind = forms.ChoiceField(required=False, choices=KIND_CHOICES)
    category = forms.ChoiceField(required=False, choices=CATEGORY_CHOICES)
    resource_type = forms.ChoiceField(required=False, choices=RESOURCE_CHOICES, label="FHIR type")
    # Patients chosen with PatientSearchForm (name, MRN or birth date), carried as ids: the search
    # words are posted, never put in a URL.
    patient = IdListField(required=False)
    queue = forms.CharField(required=False, max_length=80)
    mine = forms.BooleanField(required=False, label="Assigned to me")
    age = forms.ChoiceField(required=False, choices=AGE_CHOICES)
    sla = forms.ChoiceField(required=False, choices=SLA_CHOICES, label="SLA")
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES)
    after = forms.RegexField(required=False, regex=r"^\d{1,2}\.\d{1,20}\.\d{1,20}$|^\d{1,20}\.\d{1,20}$", widget=forms.HiddenInput)

    def clean_after(self) -> str:
        """A cursor names a real row position: band, microseconds since 1970 within the datetime range,
        and an id within a 64-bit key. Anything else is refused (the queue answers 400)."""
        value = self.cleaned_data.get("after") or ""
        if not value:
            return ""
        *rest, pk = (int(p) for p in value.split("."))
        micros = rest[-1]
        if micros > CURSOR_MAX_MICROS or not 0 < pk < 2**63:
            raise forms.ValidationError("Not a position in the queue.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        data["status"] = data.get("status") or "open"
        data["sort"] = data.get("sort") or "urgency"
        if data.get("after") and data["sort"] == "urgency" and data["after"].count(".") != 2:
            data["after"] = ""
        data["patient"] = (data.get("patient") or [])[:50]
        return data


class PatientSearchForm(forms.Form):
    """Find the queue's patient by what a nurse knows: a name, an MRN or a birth date."""

    q = forms.CharField(min_length=2, max_length=100, label="Patient",
                        widget=forms.TextInput(attrs={"placeholder": "name, MRN or birth date (YYYY-MM-DD)", "autocomplete": "off"}))


class NoteForm(forms.Form):
    text = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 3}), label="Note")


class DecisionForm(forms.Form):
    note = forms.CharField(required=False, max_length=300, label="Note (optional)")


class DismissForm(forms.Form):
    reason = forms.ChoiceField(choices=[("", "Choose a reason")] + list(TriageItem.DismissReason.choices))
    text = forms.CharField(required=False, max_length=300, label="Details")

    def clean(self) -> dict:
        data = super().clean()
        if data.get("reason") == TriageItem.DismissReason.OTHER and not (data.get("text") or "").strip():
            self.add_error("text", "Say why when the reason is 'other'.")
        return data


def _staff() -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=User.objects.filter(groups__name__in=("nurse", "admin"), is_active=True).distinct().order_by("username"),
        label="Assign to",
    )


class AssignForm(forms.Form):
    assignee = _staff()

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["assignee"] = _staff()


class BulkForm(forms.Form):
    op = forms.ChoiceField(choices=[("assign", "Assign"), ("dismiss", "Dismiss")])
    ids = IdListField(label="Findings")
    assignee = forms.ModelChoiceField(queryset=User.objects.none(), required=False)
    reason = forms.ChoiceField(required=False, choices=[("", "Choose a reason")] + list(TriageItem.DismissReason.choices))
    text = forms.CharField(required=False, max_length=300)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.fields["assignee"].queryset = _staff().queryset

    def clean(self) -> dict:
        data = super().clean()
        if data.get("op") == "assign" and not data.get("assignee"):
            self.add_error("assignee", "Choose who to assign to.")
        if data.get("op") == "dismiss":
            if not data.get("reason"):
                self.add_error("reason", "A dismiss reason is required.")
            elif data["reason"] == TriageItem.DismissReason.OTHER and not (data.get("text") or "").strip():
                self.add_error("text", "Say why when the reason is 'other'.")
        if len(data.get("ids") or []) > 200:
            self.add_error("ids", "At most 200 findings at once.")
        return data


class RoutingRuleForm(forms.ModelForm):
    match_kind = forms.ChoiceField(required=False, choices=KIND_CHOICES, label="Kind")
    match_severity = forms.ChoiceField(required=False, choices=SEVERITY_CHOICES, label="Severity")
    match_category = forms.ChoiceField(required=False, choices=CATEGORY_CHOICES, label="Category")
    match_resource_type = forms.ChoiceField(required=False, choices=RESOURCE_CHOICES, label="FHIR resource type")

    class Meta:
        model = RoutingRule
        fields = ["order", "name", "enabled", "match_kind", "match_severity", "match_safety", "match_category",
                  "match_resource_type", "queue", "priority", "sla_minutes", "action"]
        labels = {"match_safety": "Safety-critical", "sla_minutes": "SLA (minutes)"}
