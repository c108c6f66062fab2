"""The learned judge: one finding per flagged turn, quiet turns under the threshold, and the reasons on the finding."""
from __future__ import annotations

from datetime import datetime, timezone

from reconcile_app.core.linear import LinearModel
from reconcile_app.fhir.clinical import build_clinical_record
from reconcile_app.narrative.types import MemoryDraft, MemoryOp
from reconcile_app.reconciliation.engines.judge import Judge, finding_dense, pick, spoken_year, turn_dense
from reconcile_app.reconciliation.types import Citation, FindingDraft

AT = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
RECORD = build_clinical_record([
    {"resourceType": "Patient", "id": "p1"},
    {"resourceType": "MedicationRequest", "id": "m1", "status": "active", "subject": {"reference": "Patient/p1"},
     "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1", "display": "Omeprazole 20 MG"}]}},
])


def _judge(weight: float, threshold: float = 0.5) -> Judge:
    model = LinearModel("j", "2", ["no", "yes"], {"yes": {"f:m:mem:medication:self:affirmed": weight}}, {"yes": 0.0}, threshold=threshold)
    return Judge(model, threshold)


def _memory(turn: str = "t1", category: str = "medication", **attributes: object) -> MemoryDraft:
    return MemoryDraft(category=category, content="Medication omeprazole: stopped", anchor_turn_id=turn, turn_ids=(turn,),
                       quote="q", quote_start=0, quote_end=1, speaker="patient", mention_time=AT, attributes=dict(attributes))


def test_a_turn_under_the_threshold_raises_nothing_and_says_why() -> None:
    draft = FindingDraft(kind="gap", severity="medium", safety_critical=False, rule="med-undocumented")
    [out] = _judge(-5.0).apply([_memory()], [draft], RECORD)
    assert (out.kind, out.severity, out.safety_critical) == ("no_clinical_relevance", "low", False)
    assert out.rule == "judge-quiet:med-undocumented" and "below the threshold" in out.gate_notes[-1]


def test_the_judge_never_quiets_what_the_tables_call_safety_critical() -> None:
    red_flag = FindingDraft(kind="gap", severity="high", safety_critical=True, rule="redflag-gi-bleed")
    noise = FindingDraft(kind="gap", severity="low", safety_critical=False, rule="med-undocumented")
    kept, quiet = _judge(-5.0).apply([_memory(), _memory()], [red_flag, noise], RECORD)
    assert (kept.kind, kept.severity, kept.safety_critical, kept.rule) == ("gap", "high", True, "redflag-gi-bleed")
    assert "safety floor" in kept.gate_notes[-1]
    assert quiet.kind == "no_clinical_relevance" and quiet.rule == "judge-quiet:med-undocumented"


def _flag(quote: str, **fields: object) -> tuple[MemoryDraft, FindingDraft]:
    memory = _memory(category="symptom")
    memory.quote = quote
    for key, value in fields.items():
        setattr(memory, key, value)
    return memory, FindingDraft(kind="gap", severity="high", safety_critical=True, rule="redflag-syncope")


def test_the_floor_holds_for_a_caregivers_report_of_the_patient_today() -> None:
    memory, draft = _flag("She blacked out in the kitchen this morning, I caught her.", speaker="daughter")
    [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
    assert out.kind == "gap" and "safety floor" in out.gate_notes[-1]


def test_the_floor_leaves_a_retold_past_year_to_the_judge() -> None:
    # trap twins: the same sign placed in a past year, clipped or spelled out, is history the record may hold
    for quote in ("I blacked out on the stairs back in '19, that is how they found it.",
                  "In March twenty twenty-one I blacked out at work."):
        memory, draft = _flag(quote)
        [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
        assert out.kind == "no_clinical_relevance" and out.rule == "judge-quiet:redflag-syncope", quote


def test_the_floor_holds_for_a_state_since_a_past_year_and_a_year_ago_at_most() -> None:
    for quote in ("I have blacked out twice since 2019 and again this week.", "I blacked out at work in 2025."):
        memory, draft = _flag(quote)
        [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
        assert out.kind == "gap" and "safety floor" in out.gate_notes[-1], quote


def test_the_floor_leaves_negated_and_other_peoples_statements_to_the_judge() -> None:
    for fields in ({"assertion": "negated"}, {"subject": "other"}, {"assertion": "historical"}):
        memory, draft = _flag("I blacked out this morning.", **fields)
        [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
        assert out.kind == "no_clinical_relevance", fields


def test_the_floor_leaves_a_medium_rated_safety_sign_to_the_judge() -> None:
    # trap twin of the caregiver's report: the same sign rated medium (no same-day harm) is the filter's to weigh
    memory, draft = _flag("She nearly tripped on the rug this morning, I caught her.", speaker="daughter")
    draft.severity = "medium"
    [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
    assert out.kind == "no_clinical_relevance" and out.rule == "judge-quiet:redflag-syncope"


def test_the_floor_leaves_a_sign_from_an_earlier_period_of_life_to_the_judge() -> None:
    # trap twins without a calendar year: a relative past, a life stage or an age, fronted before the main clause
    for quote in ("Years ago, I blacked out at a wedding.", "When I was nineteen I blacked out once.",
                  "Back in school I blacked out in gym class."):
        memory, draft = _flag(quote)
        [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
        assert out.kind == "no_clinical_relevance", quote
    for quote in ("Years ago I blacked out once and again last night.", "When I was 30 weeks along I blacked out."):
        memory, draft = _flag(quote)
        [out] = _judge(-5.0, threshold=0.9).apply([memory], [draft], RECORD)
        assert out.kind == "gap" and "safety floor" in out.gate_notes[-1], quote


def test_spoken_years() -> None:
    assert [spoken_year(t, 2026) for t in ("2018", "'18", "\u201918", "'30", "twenty twenty-three", "two thousand and nine",
                                            "twenty oh five", "twenty nineteen")] == [2018, 2018, 2018, 1930, 2023, 2009, 2005, 2019]


def test_a_flagged_turn_raises_exactly_its_most_serious_discrepancy() -> None:
    low = FindingDraft(kind="gap", severity="low", rule="med-undocumented")
    high = FindingDraft(kind="contradiction", severity="high", safety_critical=True, rule="med-stopped-active")
    out = _judge(5.0).apply([_memory(), _memory()], [low, high], RECORD)
    assert [d.kind for d in out] == ["no_clinical_relevance", "contradiction"]
    assert "other finding speaks for it" in out[0].gate_notes[-1]


def test_a_flagged_turn_without_a_rules_discrepancy_raises_its_memory_as_a_contradiction_of_the_active_order() -> None:
    draft = FindingDraft(kind="no_clinical_relevance", rule="med-unnamed", citations=[Citation("MedicationRequest", "m1", display="Omeprazole 20 MG")])
    [out] = _judge(5.0).apply([_memory()], [draft], RECORD)
    assert out.kind == "contradiction" and out.severity == "medium" and out.rule.startswith("judge-raise:")
    assert out.explanation.endswith(".") and "Omeprazole" in out.explanation


def test_a_raised_statement_the_rules_found_agreeing_with_the_order_is_a_gap_not_a_contradiction() -> None:
    # trap twin of the test above: the same cited active order, but the rules read the statement as agreeing with it
    draft = FindingDraft(kind="agreement", rule="med-active-agrees", citations=[Citation("MedicationRequest", "m1", display="Omeprazole 20 MG")])
    [out] = _judge(5.0).apply([_memory()], [draft], RECORD)
    assert (out.kind, out.rule) == ("gap", "judge-raise:med-active-agrees")
    assert "not reflected" in out.explanation


def test_an_agreement_the_record_caught_up_with_or_a_superseding_agreement_is_never_raised() -> None:
    # truth maintenance: the EHR now records the stop, or the patient's later statement brings the chain back in line
    # with the record; the ledger resolves the earlier finding, so the judge must not re-open it as news
    stopped = FindingDraft(kind="agreement", rule="med-stopped-agrees", citations=[Citation("MedicationRequest", "m1")])
    assert pick([_memory()], [stopped]) is None
    restarted = _memory()
    restarted.op = MemoryOp.SUPERSEDE
    agrees = FindingDraft(kind="agreement", rule="med-active-agrees", citations=[Citation("MedicationRequest", "m1")])
    assert pick([restarted], [agrees]) is None
    assert pick([_memory()], [agrees]) == 0  # twin: a first statement the rules call agreeing may still be raised


def test_an_order_the_patient_says_they_take_as_instructed_is_never_raised() -> None:
    agrees = FindingDraft(kind="agreement", rule="med-active-agrees", citations=[Citation("MedicationRequest", "m1")])
    for quote in ("I take the omeprazole before breakfast, exactly as prescribed.", "Same as always, one in the morning.",
                  "Taking it like the doctor said, haven't missed one."):
        memory = _memory()
        memory.quote = quote
        assert pick([memory], [agrees]) is None, quote
    # twins: partial or changed use beside the same words, or no word of adherence at all, may still be raised
    for quote in ("I take it as prescribed, but only every other day.", "Like the doctor said, except I skipped a few.",
                  "I take the omeprazole before breakfast."):
        memory = _memory()
        memory.quote = quote
        assert pick([memory], [agrees]) == 0, quote


def test_nothing_cited_is_raised_as_a_gap_and_someone_elses_fact_never() -> None:
    assert _judge(5.0).apply([_memory()], [FindingDraft(kind="no_clinical_relevance", rule="med-unnamed")], RECORD)[0].kind == "gap"
    other = _memory()
    other.subject = "other"
    assert pick([other], [FindingDraft(kind="no_clinical_relevance")]) is None


def test_turns_are_judged_apart() -> None:
    memories = [_memory("t1"), _memory("t2", category="lifestyle")]
    drafts = [FindingDraft(kind="gap", severity="medium", rule="a"), FindingDraft(kind="gap", severity="medium", rule="b")]
    out = _judge(5.0, threshold=0.6).apply(memories, drafts, RECORD)
    assert [d.kind for d in out] == ["gap", "no_clinical_relevance"]


def test_turn_features_union_the_verdicts_and_carry_the_detector_score() -> None:
    draft = FindingDraft(kind="contradiction", severity="high", safety_critical=True, rule="med-stopped-active",
                         citations=[Citation("MedicationRequest", "m1")])
    memory = _memory(action="stopped", delta={"score": 0.95})
    dense = turn_dense([memory], [draft], RECORD)
    for key in ("m:kind:contradiction", "m:rulefam:med-stopped", "m:sev:high", "m:safety", "m:action:medication:stopped",
                "m:cite:MedicationRequest:active", "m:cite_own:active", "delta_band:9", "any_discrepancy", "any_safety"):
        assert dense.get(key) == 1.0, key
    assert dense["delta_logit"] > 0
    assert finding_dense(memory, draft, RECORD)["rule:med-stopped-active"] == 1.0


def _outcomes() -> dict[str, LinearModel]:
    kind = LinearModel("k", "1", ["contradiction", "gap", "other"], {"contradiction": {"f:any_discrepancy": 5.0}},
                       {"contradiction": 0.0, "gap": 0.0, "other": 0.0})
    safety = LinearModel("s", "1", ["False", "True"], {"True": {"f:any_discrepancy": 5.0}}, {"True": 0.0}, threshold=0.8)
    return {"kind": kind, "safety": safety}


def test_outcome_models_set_kind_and_the_safety_flag_with_a_note() -> None:
    judge = _judge(5.0)
    judge.outcomes = _outcomes()
    cited = [Citation("MedicationRequest", "m1", display="Omeprazole 20 MG")]
    [out] = judge.apply([_memory()], [FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=cited)], RECORD)
    assert out.kind == "contradiction" and out.safety_critical
    assert any("learned" in note for note in out.gate_notes)


def test_a_judge_trained_off_keeps_every_rules_verdict_and_only_characterises_discrepancies() -> None:
    safety = LinearModel("s", "1", ["False", "True"], {"True": {"f:any_discrepancy": 5.0}}, {"True": 0.0}, threshold=0.8)
    judge = _judge(-5.0, threshold=1.01)  # the score says quiet, but the filter is off
    judge.outcomes = {"safety": safety}
    agreement = FindingDraft(kind="agreement", rule="med-active-agrees")
    gap = FindingDraft(kind="gap", severity="medium", rule="med-undocumented")
    out = judge.apply([_memory(), _memory()], [agreement, gap], RECORD)
    assert not judge.filters
    assert [(d.kind, d.rule) for d in out] == [("agreement", "med-active-agrees"), ("gap", "med-undocumented")]
    assert out[1].safety_critical and not out[0].safety_critical


def _always_raise() -> Judge:
    model = LinearModel("j", "2", ["no", "yes"], {"yes": {}}, {"yes": 5.0}, threshold=0.5)
    return Judge(model, 0.5)


def _said(turn: str, category: str, content: str, quote: str) -> MemoryDraft:
    memory = _memory(turn, category=category)
    memory.content, memory.quote = content, quote
    return memory


def test_a_raised_turn_about_an_entry_the_session_already_contradicts_takes_that_kind() -> None:
    # "quit the heartburn pill last month" (the rules: a stop of the active order), then "since then a burning in my
    # chest after supper" raised by the judge and cited to the same order: one conflict with one entry, not a gap too
    stop = FindingDraft(kind="contradiction", severity="medium", rule="med-stopped-active", citations=[Citation("MedicationRequest", "m1")])
    symptom = FindingDraft(kind="no_clinical_relevance", rule="symptom-unflagged", citations=[Citation("MedicationRequest", "m1")])
    memories = [_said("t1", "medication", "Medication omeprazole: stopped", "quit the heartburn pill last month"),
                _said("t2", "symptom", "Symptom burning chest", "since then a burning in my chest after supper")]
    kept, raised = _always_raise().apply(memories, [stop, symptom], RECORD)
    assert kept.kind == "contradiction" and raised.rule == "judge-raise:symptom-unflagged"
    assert raised.kind == "contradiction" and "judges the same entry or turn" in raised.gate_notes[-1]


def test_a_raised_turn_keeps_its_own_kind_beside_a_finding_about_another_entry_or_none() -> None:
    # trap twin: the session's contradiction is about another order; the raised symptom cites nothing of it
    stop = FindingDraft(kind="contradiction", severity="medium", rule="med-stopped-active", citations=[Citation("MedicationRequest", "m9")])
    symptom = FindingDraft(kind="no_clinical_relevance", rule="symptom-unflagged")
    memories = [_said("t1", "medication", "Medication metformin: stopped", "gave up the sugar tablets in May"),
                _said("t2", "symptom", "Symptom burning chest", "and a burning in my chest after supper")]
    _, raised = _always_raise().apply(memories, [stop, symptom], RECORD)
    assert raised.kind == "gap" and not any("same record entry" in n for n in raised.gate_notes)
    # and a rules gap about the same order (a new supplement cited beside it) makes a raised turn citing it a gap
    beside = FindingDraft(kind="gap", severity="low", rule="med-undocumented", citations=[Citation("MedicationRequest", "m1")])
    mention = FindingDraft(kind="no_clinical_relevance", rule="med-unnamed", citations=[Citation("MedicationRequest", "m1")])
    memories = [_said("t1", "medication", "Medication ginger: taking", "been chewing ginger candies for my stomach"),
                _said("t2", "medication", "Clinical statement (medication)", "the little purple capsule still every morning")]
    _, raised = _always_raise().apply(memories, [beside, mention], RECORD)
    assert raised.kind == "gap"


def test_a_raised_memory_drawn_from_the_turn_of_a_rules_contradiction_takes_its_kind() -> None:
    # one turn, "gave up cigarettes in the spring but the patches make my skin itch": the rules read the smoking status
    # against the record, the raised itch cites nothing of it; both come from the same words, so one kind
    status = FindingDraft(kind="contradiction", severity="medium", rule="smoking-status-contradicted", citations=[Citation("Observation", "o1")])
    itch = FindingDraft(kind="no_clinical_relevance", rule="symptom-unflagged")
    quit_smoking = _said("t1", "lifestyle", "tobacco use none", "gave up cigarettes in the spring")
    skin = _said("t2", "symptom", "Symptom itching", "the patches make my skin itch")
    skin.turn_ids = ("t2", "t1")
    _, raised = _always_raise().apply([quit_smoking, skin], [status, itch], RECORD)
    assert raised.kind == "contradiction"


def test_a_raised_statement_retelling_a_past_year_is_a_gap_though_it_cites_the_active_order() -> None:
    # trap twin of the raised contradiction above: history ("back in 2019 the heart doctor had me quit it for a while")
    # the record may well hold is no conflict with today's order
    draft = FindingDraft(kind="no_clinical_relevance", rule="med-unnamed", citations=[Citation("MedicationRequest", "m1", display="Omeprazole 20 MG")])
    memory = _said("t1", "medication", "Medication omeprazole: stopped", "back in 2019 the heart doctor had me quit it for a while")
    [out] = _judge(5.0).apply([memory], [draft], RECORD)
    assert out.kind == "gap" and out.rule.startswith("judge-raise:")


def test_the_kind_model_makes_a_contradiction_only_of_what_the_patient_affirms_now() -> None:
    cited = [Citation("MedicationRequest", "m1", display="Omeprazole 20 MG")]
    for fields, quote in (({"assertion": "negated"}, "my son never takes his stomach pills"),
                          ({"subject": "other"}, "my husband gave up his reflux tablets"),
                          ({}, "in 2021 I went off the acid pill for a month")):
        judge = _judge(5.0)
        judge.outcomes = _outcomes()
        memory = _said("t1", "medication", "Medication omeprazole: stopped", quote)
        for key, value in fields.items():
            setattr(memory, key, value)
        [out] = judge.apply([memory], [FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=cited)], RECORD)
        assert out.kind == "gap", quote
    # twin: the same model on the patient's own statement of today still sets the kind (see the outcome models' test)
    judge = _judge(5.0)
    judge.outcomes = _outcomes()
    memory = _said("t1", "medication", "Medication omeprazole: stopped", "I went off the acid pill this week")
    [out] = judge.apply([memory], [FindingDraft(kind="gap", severity="medium", rule="med-undocumented", citations=cited)], RECORD)
    assert out.kind == "contradiction"
