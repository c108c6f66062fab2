"""Concepts other than drugs: every name sourced, one vaccine per disease word, allergen families the extractor reads."""
from __future__ import annotations

import json

from reconcile_app.terminology.concepts import DATA_DIR, KIND_FILES, allergen_families, load_concepts, vaccine_names_by_disease


def test_every_concept_and_name_credits_a_listed_source() -> None:
    for name in KIND_FILES.values():
        data = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
        ids = [row["id"] for row in data["concepts"]]
        assert len(ids) == len(set(ids)), name
        for row in data["concepts"]:
            assert row["source"] in data["sources"], (name, row["id"])
            for field in ("diseases", "members"):
                for word, source in row.get(field, {}).items():
                    assert source in data["sources"], (name, row["id"], word, source)


def test_a_disease_word_names_one_vaccine() -> None:
    seen: dict[str, str] = {}
    for concept in load_concepts().of_kind("immunization"):
        for word in concept.diseases:
            assert seen.setdefault(word, concept.id) == concept.id, (word, seen[word], concept.id)


def test_vaccines_are_named_by_their_diseases_and_lay_names() -> None:
    names = vaccine_names_by_disease()
    assert names["shingles"] == names["zoster"] == "zoster vaccine"
    assert names["whooping"] == names["pertussis"]
    assert names["flu"] == "influenza vaccine"


def test_an_allergen_family_holds_its_member_drugs() -> None:
    families = allergen_families()
    assert "amoxicillin" in families["penicillin"]
    assert "cephalexin" in families["cephalosporin"]
    assert set(families) >= {"sulfonamide", "nsaid", "insect venom", "tree nut", "shellfish"}
