"""The citation ranker: candidates linked through the terminology and the tables, the cap, entered-in-error, the hook."""
from __future__ import annotations

import pytest

from reconcile_app.core.linear import LinearModel
from reconcile_app.evaluation.training_cite import CiteCase, simulate
from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.reconciliation.engines.citing import (
    CitationRanker, add_citations, candidate_features, mentions_in,
)
from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.reconciliation.types import Citation, FindingDraft
from tests.reconciliation.conftest import load_record, memory

HAND = CitationRanker(None)


@pytest.fixture(scope="module")
def chart() -> ClinicalRecord:
    return load_record("citing_patient.json")  # warfarin, AF, diabetes, two INRs, a glucose, two care plans, a voided ibuprofen


def _features(text: str, chart: ClinicalRecord, category: str = "medication", **kw: object) -> dict[str, dict[str, float]]:
    return {e.id: f for e, f in candidate_features(text, category, chart, **kw)}


def test_an_nsaid_the_patient_took_links_the_anticoagulant_and_its_lab(chart: ClinicalRecord) -> None:
    found = _features("I took a couple of ibuprofen for my sore wrist on Sunday", chart)
    assert found["warf"]["interacts"] == 1.0
    assert found["inr-new"]["interaction_lab"] == 1.0
    top = [r.entry.id for r in HAND.rank("I took a couple of ibuprofen for my sore wrist on Sunday", "medication", chart)[:2]]
    assert top == ["warf", "inr-new"]


def test_trap_twin_a_walk_links_no_drug_and_no_lab(chart: ClinicalRecord) -> None:
    found = _features("I took the dog for a walk around the pond on Sunday", chart)
    assert "warf" not in found and "inr-new" not in found
    assert HAND.extra("I took the dog for a walk around the pond on Sunday", "lifestyle", chart, []) == []


def test_entered_in_error_entries_are_never_candidates(chart: ClinicalRecord) -> None:
    found = _features("I took a couple of ibuprofen for my sore wrist on Sunday", chart)
    assert "ibu-void" not in found
    assert mentions_in("I took a couple of ibuprofen for my sore wrist on Sunday", load_knowledge()).drugs >= {"ibuprofen"}


def test_a_reading_links_its_observation_series_once_and_its_condition_and_plan(chart: ClinicalRecord) -> None:
    found = _features("my fasting sugar was 190 two mornings running", chart, "measurement")
    assert found["glu"]["measure"] == 1.0 and found["glu"]["own_type"] == 1.0
    assert found["t2dm"]["measure_condition"] == 1.0
    assert found["plan-dm"]["plan_addresses"] == 1.0 and found["plan-dm"]["plan_terms"] == 1.0
    assert "plan_addresses" not in found["plan-af"]


def test_only_the_newest_observation_of_a_code_stands_for_its_history(chart: ClinicalRecord) -> None:
    found = _features("they changed nothing after my last INR", chart, "measurement")
    assert "inr-new" in found and "inr-old" not in found


def test_trap_twin_a_number_about_the_weather_links_no_observation(chart: ClinicalRecord) -> None:
    found = _features("it was 90 degrees out on the porch all afternoon", chart, "measurement")
    assert not {"glu", "inr-new", "t2dm"} & set(found)


def test_a_stopped_drug_is_marked_historical(chart: ClinicalRecord) -> None:
    found = _features("my sugar has been creeping up since spring", chart, "measurement")
    assert found["metf-old"]["state:historical"] == 1.0
    assert "state:historical" not in found["t2dm"]


def test_the_rest_of_the_session_links_what_the_turn_alone_does_not(chart: ClinicalRecord) -> None:
    found = _features("yes, about four days now", chart, "symptom", session_text="I started ibuprofen for my back. yes, about four days now")
    assert found["warf"]["s:interacts"] == 1.0 and "interacts" not in found["warf"]


def test_what_the_finding_cites_links_the_condition_its_drug_treats(chart: ClinicalRecord) -> None:
    cited = [Citation("MedicationRequest", "warf", "http://www.nlm.nih.gov/research/umls/rxnorm", "855332")]
    found = _features("I skipped it most of last week", chart, cited=cited)
    assert found["afib"]["c:indication"] == 1.0
    assert "warf" not in {k for k, f in found.items() if any(n.startswith("c:") for n in f)}


def test_extra_skips_what_is_cited_by_id_or_code_and_keeps_the_cap(chart: ClinicalRecord) -> None:
    text = "my fasting sugar was 190 two mornings running"
    cited = [Citation("Observation", "another-glucose", "http://loinc.org", "2345-7")]
    assert "glu" in {r.entry.id for r in HAND.rank(text, "measurement", chart)}
    [added] = HAND.extra(text, "measurement", chart, cited, limit=1)
    assert added.entry.id == "plan-dm" and added.score >= HAND.threshold
    assert [r.entry.id for r in HAND.extra(text, "measurement", chart, cited, limit=3)] == ["plan-dm"]  # the rest under the threshold


def test_a_learned_model_scores_by_its_weights_and_explains(chart: ClinicalRecord) -> None:
    model = LinearModel("cite", "1", ["no", "yes"], {"yes": {"f:interaction_lab": 4.0}}, {"yes": -2.0}, threshold=0.5)
    ranker = CitationRanker(model)
    [top] = ranker.extra("I took a couple of ibuprofen for my sore wrist on Sunday", "medication", chart, [], limit=3)
    assert top.entry.id == "inr-new" and top.why[0] == "interaction_lab" and top.score > 0.8
    assert ranker.version.startswith("cite.") and ranker.version != HAND.version


def test_the_hook_cites_beside_a_raised_finding_only_with_a_note(chart: ClinicalRecord) -> None:
    said = "I took a couple of ibuprofen for my sore wrist on Sunday"
    raised = FindingDraft(kind="gap", severity="medium", rule="judge-raise:med-otc")
    rules = FindingDraft(kind="gap", severity="medium", rule="med-undocumented")
    quiet = FindingDraft(kind="no_clinical_relevance", rule="judge-raise:x")
    add_citations(HAND, [memory("medication", said)] * 3, [raised, rules, quiet], chart, scope="raised")
    assert [c.id for c in raised.citations] == ["warf"]  # the INR links through the table alone: under the hand threshold
    assert "cited MedicationRequest/warf" in raised.gate_notes[0]
    assert rules.citations == [] and quiet.citations == []


def test_simulate_counts_a_scenario_informed_once_and_one_citation_per_code() -> None:
    case = CiteCase("tune/x01", "sc1", False, 0, [({"a": 1.0}, True), ({"a": 1.0}, True), ({"b": 1.0}, False)], ["O|l|1", "O|l|1", "C|s|2"])
    other = CiteCase("tune/x01", "sc1", False, 0, [({"b": 1.0}, False)], ["C|s|2"])
    rates = simulate([case, other], [[0.9, 0.8, 0.7], [0.2]], 0.5, limit=2)
    assert rates == {"informed": 1.0, "added_per_case": 1.0, "added_precision": 0.5}


def test_in_the_uncited_scope_a_rules_discrepancy_citing_nothing_gets_citations_too(chart: ClinicalRecord) -> None:
    said = "I took a couple of ibuprofen for my sore wrist on Sunday"
    bare = FindingDraft(kind="gap", severity="medium", rule="med-undocumented")
    cited = FindingDraft(kind="gap", severity="medium", rule="med-undocumented",
                         citations=[Citation("Condition", "afib", "http://snomed.info/sct", "49436004")])
    add_citations(HAND, [memory("medication", said)] * 2, [bare, cited], chart, scope="uncited")
    assert [c.id for c in bare.citations] == ["warf"] and [c.id for c in cited.citations] == ["afib"]


def test_a_rules_finding_that_cites_gets_one_more_entry_only_when_the_model_is_sure(chart: ClinicalRecord) -> None:
    said = "I took a couple of ibuprofen for my sore wrist on Sunday"
    model = LinearModel("cite", "1", ["no", "yes"], {"yes": {"f:interacts": 5.0, "f:interaction_lab": 1.0}}, {"yes": -2.0}, threshold=0.1)
    cited = [Citation("Condition", "afib", "http://snomed.info/sct", "49436004")]
    sure = FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=list(cited))
    add_citations(CitationRanker(model), [memory("medication", said)], [sure], chart, scope="uncited", strong=0.6)
    assert [c.id for c in sure.citations] == ["afib", "warf"]  # the INR (p 0.27) is over the threshold, not sure enough
    unsure = LinearModel("cite", "1", ["no", "yes"], {"yes": {"f:interacts": 1.0}}, {"yes": -1.0}, threshold=0.1)
    kept = FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=list(cited))
    add_citations(CitationRanker(unsure), [memory("medication", said)], [kept], chart, scope="uncited", strong=0.6)
    off = FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=list(cited))
    add_citations(CitationRanker(model), [memory("medication", said)], [off], chart, scope="uncited", strong=None)
    assert [c.id for c in off.citations] == ["afib"]
    assert [c.id for c in kept.citations] == ["afib"]


def test_a_drug_the_tables_do_not_know_links_by_a_word_of_its_record_display() -> None:
    from reconcile_app.fhir.clinical import build_clinical_record
    record = build_clinical_record([{"resourceType": "Patient", "id": "p1"}, {
        "resourceType": "MedicationRequest", "id": "zz", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
        "medicationCodeableConcept": {"text": "zorbemide 40 MG Oral Tablet"}}])
    found = {e.id: f for e, f in candidate_features("the pharmacy swapped my zorbemide for another brand", "medication", record)}
    assert found["zz"]["display_word"] == 1.0
    twin = {e.id: f for e, f in candidate_features("the pharmacy gave me a bigger oral tablet this time", "medication", record)}
    assert "zz" not in twin  # dose-form words name no drug
