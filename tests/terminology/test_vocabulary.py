"""The shared vocabulary: every name sourced, one sense per name, a class taxonomy without holes, read alike by both engines."""
from __future__ import annotations

import json

import pytest

from reconcile_app.terminology.vocabulary import CLASSES_PATH, DRUGS_PATH, key, load_vocabulary


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary()


def test_every_name_credits_a_listed_source(vocab) -> None:
    for path, rows in ((DRUGS_PATH, "drugs"), (CLASSES_PATH, "classes")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for row in data[rows]:
            assert len(row["source"]) > 8, row["id"]
            for term, source in row.get("terms", {}).items():
                assert source in data["sources"], (row["id"], term, source)


def test_a_name_is_a_drug_or_a_class_never_both(vocab) -> None:
    drug_names = {key(t) for d in vocab.drugs.values() for t in d.terms}
    class_names = {key(t) for c in vocab.classes.values() for t in c.terms}
    assert not drug_names & class_names


def test_a_name_belongs_to_one_drug(vocab) -> None:
    seen: dict[str, str] = {}
    for drug in vocab.drugs.values():
        for term in drug.terms:
            assert seen.setdefault(key(term), drug.id) == drug.id, (term, seen[key(term)], drug.id)


def test_every_class_a_row_names_exists_and_the_taxonomy_has_no_cycle(vocab) -> None:
    for drug in vocab.drugs.values():
        assert set(drug.classes) <= set(vocab.classes), drug.id
    for cls in vocab.classes.values():
        assert set(cls.parents) <= set(vocab.classes), cls.id
        assert cls.id not in vocab.ancestors(cls.id), cls.id


@pytest.mark.parametrize(("name", "drug"), [
    ("Jantoven", "warfarin"), ("toprol xl", "metoprolol"), ("lisinopirl", "lisinopril"), ("Tylenol PM", "acetaminophen/diphenhydramine"),
    ("ergocalciferol", "vitamin d"), ("Bactrim", "trimethoprim/sulfamethoxazole"),
])
def test_brands_misspellings_and_ingredients_resolve_to_one_generic(vocab, name: str, drug: str) -> None:
    assert vocab.drug_named(name).id == drug


def test_a_lay_family_covers_the_classes_it_names_and_only_those(vocab) -> None:
    family = vocab.class_named("blood thinner")
    assert family.family
    assert vocab.is_a("anticoagulant", family.id) and vocab.is_a("antiplatelet", family.id)
    assert not vocab.is_a("statin", family.id)
    pressure = vocab.class_named("pressure pills")
    assert vocab.is_a("ace_inhibitor", pressure.id) and vocab.is_a("thiazide", pressure.id)


def test_the_reported_class_is_the_most_specific_one(vocab) -> None:
    assert vocab.reported_class("metformin").id == "biguanide"
    assert vocab.reported_class("furosemide").id == "loop_diuretic"
    assert vocab.is_a("biguanide", "antidiabetic")


def test_both_engines_read_the_same_names() -> None:
    from reconcile_app.reconciliation.matching import drugs_in_text
    from reconcile_app.terminology.lexicon import default_lexicon, lower_same_length, tokenize

    lex = default_lexicon()
    for text in ("my jantoven", "the Norco", "metforman"):
        low = lower_same_length(text)
        extracted = {h.best.canonical for h in lex.match(low, tokenize(low)) if h.best.kind == "drug"}
        extracted |= {c.suggestion for c in lex.near_misses(tokenize(low), set()) if c.admitted}
        reconciled = {d.name for d in drugs_in_text(text).drugs}
        assert extracted and extracted == reconciled, (text, extracted, reconciled)
