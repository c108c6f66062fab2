"""Pure presentation helpers: compact ages, escaped selects, FHIR entries rendered for people."""
from __future__ import annotations

from datetime import timedelta

from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.triage.charts import ratio_bars, stacked_bars
from reconcile_app.triage.display import entry_author, entry_view
from reconcile_app.triage.presenters import select_html, span_text


def test_span_text_is_compact():
    assert span_text(timedelta(minutes=45)) == "45 min"
    assert span_text(timedelta(hours=5)) == "5 h"
    assert span_text(timedelta(days=3, hours=2)) == "3 d"
    assert span_text(timedelta(seconds=-5)) == "0 min"


def test_select_html_escapes_and_marks_the_choice():
    html = str(select_html(name="category", choices=[("", "Any"), ("<x>", "A & B")], selected="<x>"))
    assert '<select name="category" id="id_category">' in html
    assert '<option value="&lt;x&gt;" selected>A &amp; B</option>' in html
    assert "<x>" not in html


def test_observation_entry_shows_value_and_performer():
    record = build_clinical_record([{
        "resourceType": "Observation", "id": "bp", "status": "final", "effectiveDateTime": "2026-01-02T09:00:00Z",
        "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9", "display": "Blood pressure"}]},
        "performer": [{"display": "Nurse Joy"}],
        "component": [
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic"}]}, "valueQuantity": {"value": 150, "unit": "mmHg"}},
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4", "display": "Diastolic"}]}, "valueQuantity": {"value": 95, "unit": "mmHg"}},
        ],
    }])
    view = entry_view(citation={"resourceType": "Observation", "id": "bp"}, entry=record.get("Observation", "bp"))
    assert view["value"] == "Systolic 150 mmHg / Diastolic 95 mmHg"
    assert (view["system_label"], view["code"], view["date"], view["author"]) == ("LOINC", "85354-9", "2026-01-02", "Nurse Joy")


def test_missing_entry_keeps_the_citation_and_says_not_found():
    view = entry_view(citation={"resourceType": "Condition", "id": "x", "display": "Asthma", "system": "http://snomed.info/sct", "code": "195967001"}, entry=None)
    assert view["found"] is False and view["system_label"] == "SNOMED" and view["display"] == "Asthma"


def test_author_falls_back_through_recorder_requester_asserter():
    assert entry_author({"asserter": {"reference": "Practitioner/1"}}) == "Practitioner/1"
    assert entry_author({}) == ""


def test_stacked_bars_scale_to_the_tallest_column():
    chart = stacked_bars(title="t", groups=["a", "b"], series={"high": [2, 0], "low": [2, 1]}, height=100, bottom=20)
    heights = {(b.label, b.series): b.height for b in chart.bars}
    assert heights[("a", "high")] + heights[("a", "low")] == 72.0  # the full plot height
    assert ("b", "high") not in heights


def test_ratio_bars_skip_unknown_ratios():
    chart = ratio_bars(title="p", rows=[("medication", 0.5), ("allergy", None)])
    assert [b.label for b in chart.bars] == ["medication"]
