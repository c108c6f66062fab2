"""The drug classes the interaction table names (lithium, antithyroid, CYP3A4, decongestant...) reach their members."""
from __future__ import annotations

import pytest

from reconcile_app.reconciliation.knowledge import load_knowledge
from reconcile_app.terminology.vocabulary import load_vocabulary


@pytest.mark.parametrize(("name", "generic", "cls"), [
    ("Tapazole", "methimazole", "antithyroid"),
    ("PTU", "propylthiouracil", "antithyroid"),
    ("Lithobid", "lithium", "lithium"),
    ("Prograf", "tacrolimus", "calcineurin_or_mtor_inhibitor"),
    ("Xarelto", "rivaroxaban", "doac"),
    ("Biaxin", "clarithromycin", "strong_cyp3a4_inhibitor"),
    ("Paxlovid", "nirmatrelvir/ritonavir", "strong_cyp3a4_inhibitor"),
    ("Tegretol", "carbamazepine", "strong_cyp3a4_inducer"),
    ("Sudafed", "pseudoephedrine", "decongestant"),
    ("Tums", "calcium carbonate", "polyvalent_cation"),
    ("Azilect", "rasagiline", "maoi"),
    ("Maxalt", "rizatriptan", "triptan"),
    ("Cymbalta", "duloxetine", "snri"),
    ("Flexeril", "cyclobenzaprine", "muscle_relaxant"),
    ("Zofran", "ondansetron", "qt_prolonging"),
    ("Vesicare", "solifenacin", "strong_anticholinergic"),
    ("Flomax", "tamsulosin", "alpha_blocker"),
    ("Clozaril", "clozapine", "clozapine"),
    ("Prolia", "denosumab", "denosumab"),
    ("sea kelp", "kelp", "supplement"),
])
def test_a_brand_reaches_its_generic_and_the_class_the_interaction_rows_name(name: str, generic: str, cls: str) -> None:
    vocab = load_vocabulary()
    drug = vocab.drug_named(name)
    assert drug is not None and drug.id == generic
    assert cls in load_knowledge().drug_classes(drug)


def test_a_combination_product_carries_the_classes_of_its_ingredients() -> None:
    kb, vocab = load_knowledge(), load_vocabulary()
    assert "decongestant" in kb.drug_classes(vocab.drug_named("DayQuil"))
    assert "strong_anticholinergic" in kb.drug_classes(vocab.drug_named("Tylenol PM"))


def test_a_narrower_class_keeps_the_facts_of_the_broader_one() -> None:
    kb, vocab = load_knowledge(), load_vocabulary()
    assert {"doac", "anticoagulant"} <= kb.drug_classes(vocab.drug_named("apixaban"))
    assert kb.classes["lithium"].change == ("high", True)  # narrow therapeutic range


def test_licorice_root_and_black_licorice_are_the_glycyrrhizin_entry() -> None:
    vocab = load_vocabulary()
    assert vocab.drug_named("licorice root").id == vocab.drug_named("black licorice").id == "licorice"
