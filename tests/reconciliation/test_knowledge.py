"""The curated knowledge tables load, index and carry a source on every row."""
from __future__ import annotations

import pytest

from reconcile_app.reconciliation.knowledge import eval_rule, load_knowledge, table_rows

from .test_tables import PENDING_VOCABULARY


def test_every_row_of_every_table_names_its_source() -> None:
    tables = table_rows()
    assert set(tables) >= {"drugs", "drug_classes", "conditions", "vaccines", "measurements", "interactions", "red_flags", "allergens"}
    for table, rows in tables.items():
        assert rows, table
        for row in rows:
            assert isinstance(row.get("source"), str) and len(row["source"]) > 5, (table, row)


def test_classes_named_by_drugs_and_interactions_exist() -> None:
    kb = load_knowledge()
    from reconcile_app.terminology.vocabulary import load_vocabulary

    vocab = load_vocabulary()
    for drug in kb.drugs:  # a drug's classes are the tables' classes, or lay families ("steroids") that group them
        assert all(c in kb.classes or vocab.classes[c].family for c in drug.classes), drug.name
    for cls in kb.classes.values():
        assert all(p in kb.classes or vocab.classes[p].family for p in cls.parents), cls.id
        assert set(cls.indications) <= set(kb.conditions), cls.id
    for row in kb.interactions:
        for ref in (row.a, row.b):
            if ref in PENDING_VOCABULARY:
                continue  # a row waiting for a vocabulary id (members and source listed in test_tables.py)
            kind, _, value = ref.partition(":")
            if kind == "class":
                assert value in kb.classes, ref
            elif kind == "condition":
                assert value in kb.conditions, ref
            else:
                assert kind in ("drug", "state", "vaccine"), ref


def test_red_flag_tables_point_at_known_concepts() -> None:
    kb = load_knowledge()
    for flag in kb.red_flags:
        assert set(flag.conditions) <= set(kb.conditions), flag.id
        assert set(flag.classes) <= set(kb.classes), flag.id


@pytest.mark.parametrize(
    ("expr", "values", "conditions", "expected"),
    [
        ("value >= 180 or value2 >= 120", {"value": 184, "value2": 112}, set(), True),
        ("value >= 180 or value2 >= 120", {"value": 150, "value2": 95}, set(), False),
        ("value < 100 or (value2 < 60 and value2 > 0)", {"value": 104, "value2": 0}, set(), False),
        ("value >= 6.5 and not has_condition('diabetes')", {"value": 7.1}, {"prediabetes"}, True),
        ("value >= 6.5 and not has_condition('diabetes')", {"value": 7.1}, {"diabetes"}, False),
        ("value < 2 or value > 3", {}, set(), False),
    ],
)
def test_range_rules_evaluate_safely(expr: str, values: dict, conditions: set, expected: bool) -> None:
    assert eval_rule(expr, values, conditions) is expected


def test_range_rule_rejects_code() -> None:
    with pytest.raises(ValueError):
        eval_rule("__import__('os').system('true')", {}, set())


@pytest.mark.parametrize(
    ("text", "flag", "fires"),
    [
        ("my chest got tight like a belt when i shoveled", "chest-pain", True),
        ("no chest pain or anything", "chest-pain", False),
        ("i fell on the ice", "fall", True),
        ("she fell asleep in the car", "fall", False),
        ("everyone would be better off without me", "suicidal", True),
        ("i cant breathe lying flat so i sleep in the recliner", "orthopnea", True),
        ("weather is trash", "rash", False),
        ("got a rash from poison ivy", "rash", False),
        ("black tarry stools", "gi-bleed", True),
        ("my heart was racing after the run", "palpitations", False),
        ("we hold the meeting in the fellowship hall", "fall", False),
        ("my husband fell off the ladder", "fall", False),
        ("he passed out at the bbq", "syncope", False),
        ("i passed out at the bbq", "syncope", True),
        ("the kids dozed off and i carried them inside", "drowsy-driving", False),
        ("i nodded off at the wheel on the highway", "drowsy-driving", True),
        ("the nurse asked about lightheaded spells and i said no, not since the new pills", "orthostatic-dizziness", False),
    ],
)
def test_red_flag_patterns(text: str, flag: str, fires: bool) -> None:
    [row] = [f for f in load_knowledge().red_flags if f.id == flag]
    assert row.matches(text) is fires


def test_allergy_class_links_only_cross_reactive_classes() -> None:
    kb = load_knowledge()
    cross = {c.id for c in kb.classes.values() if c.cross_reactive}
    assert {"penicillin_class", "nsaid", "ace_inhibitor"} <= cross
    # shared properties (teratogenic, high-risk) are not shared allergies
    assert not {"teratogen", "anticoagulant", "antihypertensive", "supplement"} & cross


@pytest.mark.parametrize(("text", "site"), [("got my iud taken out", "uterus"), ("the oral surgeon pulled two molars", "tooth")])
def test_device_and_tooth_words_name_their_body_site(text: str, site: str) -> None:
    from reconcile_app.reconciliation.matching import sites_in_text

    assert site in sites_in_text(text, load_knowledge())


def test_sleep_apnea_relates_to_its_cardiovascular_companions() -> None:
    assert {"hypertension", "atrial_fibrillation"} <= set(load_knowledge().conditions["osa"].related)


def test_a_first_generation_antihistamine_with_an_enlarged_prostate_is_an_interaction_row() -> None:
    kb = load_knowledge()
    assert any({r.a, r.b} == {"drug:diphenhydramine", "condition:bph"} for r in kb.interactions)
    assert "diphenhydramine" in kb.drug_by_name["acetaminophen/diphenhydramine"].components


@pytest.mark.parametrize(("value", "sex", "low"), [(11.2, "female", True), (12.4, "female", False), (12.4, "male", True), (13.5, "male", False)])
def test_haemoglobin_thresholds_are_sex_specific(value: float, sex: str, low: bool) -> None:
    rules = load_knowledge().measures["hemoglobin"].rules
    assert any(eval_rule(r.when, {"value": value, "sex": sex}, set()) for r in rules) is low
