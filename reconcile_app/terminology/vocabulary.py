"""The curated vocabulary both engines read: drugs and drug classes with every name, each name sourced (data/*.json)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
DRUGS_PATH = DATA_DIR / "drugs.json"
CLASSES_PATH = DATA_DIR / "drug_classes.json"

_PAREN = re.compile(r"\s*\([^)]*\)")
_SPACES = re.compile(r"\s+")


def key(text: str) -> str:
    """The lookup form of a name: lowercased, curly apostrophes folded, parentheses and extra spaces dropped."""
    text = (text or "").lower().replace("\u2019", "'").replace("\u2018", "'")
    return _SPACES.sub(" ", _PAREN.sub("", text)).strip(" ,.")


@dataclass(frozen=True)
class DrugClass:
    id: str
    label: str  # what the extractor reports ("ace inhibitor", "blood thinner")
    parents: tuple[str, ...]  # broader classes and lay families ("blood thinner" over anticoagulant and antiplatelet)
    terms: dict[str, str]  # lay name -> source key
    forms: tuple[str, ...]  # dosage-form words that ground the class in a quote ("inhaler", "pen")
    devices: tuple[str, ...]  # delivery devices whose removal stops the drug ("pump")
    source: str
    family: bool = False  # a lay or dosage-form family ("heart pills", "inhaler"): groups classes, has no clinical facts


@dataclass(frozen=True)
class Drug:
    id: str  # the generic name ("hydrocodone/acetaminophen" for a combination)
    classes: tuple[str, ...]  # the first is the class the extractor reports
    terms: dict[str, str]  # every name (generic, brand, abbreviation, misspelling) -> source key
    components: tuple[str, ...]
    source: str

    @property
    def name(self) -> str:
        return self.id

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(t for t in self.terms if t != self.id)


@dataclass(frozen=True, eq=False)  # hashed by identity: the loaded vocabulary is one object per process
class Vocabulary:
    classes: dict[str, DrugClass]
    drugs: dict[str, Drug]
    sources: dict[str, str]  # source key -> citation

    # ---- classes --------------------------------------------------------------------------------

    def ancestors(self, class_id: str) -> frozenset[str]:
        """Every broader class of a class (not the class itself)."""
        return _ancestors(self, class_id)

    def descendants(self, class_id: str) -> frozenset[str]:
        """Every narrower class of a class (not the class itself)."""
        return _descendants(self, class_id)

    def is_a(self, class_id: str, family_id: str) -> bool:
        return class_id == family_id or family_id in self.ancestors(class_id)

    def class_named(self, text: str) -> DrugClass | None:
        """A class by id, label or one of its lay names."""
        return _class_index(self).get(key(text).replace("_", " ")) or self.classes.get(key(text))

    # ---- drugs ----------------------------------------------------------------------------------

    def drug_named(self, text: str) -> Drug | None:
        """A drug by its generic name or any other name it has."""
        return _drug_index(self).get(key(text))

    def reported_class(self, drug: Drug | str) -> DrugClass | None:
        found = self.drugs.get(drug) if isinstance(drug, str) else drug
        if found is None or not found.classes:
            return None
        return self.classes.get(found.classes[0])

    def source_of(self, source_key: str) -> str:
        return self.sources.get(source_key, source_key)


@lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    drugs_data = json.loads(DRUGS_PATH.read_text(encoding="utf-8"))
    classes_data = json.loads(CLASSES_PATH.read_text(encoding="utf-8"))
    classes = {
        r["id"]: DrugClass(r["id"], r["label"], tuple(r.get("parents", ())), dict(r.get("terms", {})), tuple(r.get("forms", ())),
                           tuple(r.get("devices", ())), r["source"], bool(r.get("family", False)))
        for r in classes_data["classes"]
    }
    drugs = {
        r["id"]: Drug(r["id"], tuple(r.get("classes", ())), dict(r.get("terms", {})), tuple(r.get("components", ())), r["source"])
        for r in drugs_data["drugs"]
    }
    sources = {**classes_data.get("sources", {}), **drugs_data.get("sources", {})}
    return Vocabulary(classes, drugs, sources)


@lru_cache(maxsize=512)
def _ancestors(vocab: Vocabulary, class_id: str) -> frozenset[str]:
    out: set[str] = set()
    todo = list(vocab.classes[class_id].parents) if class_id in vocab.classes else []
    while todo:
        cid = todo.pop()
        if cid in out:
            continue
        out.add(cid)
        if cid in vocab.classes:
            todo.extend(vocab.classes[cid].parents)
    return frozenset(out)


@lru_cache(maxsize=512)
def _descendants(vocab: Vocabulary, class_id: str) -> frozenset[str]:
    return frozenset(cid for cid in vocab.classes if class_id in _ancestors(vocab, cid))


@lru_cache(maxsize=4)
def _drug_index(vocab: Vocabulary) -> dict[str, Drug]:
    index: dict[str, Drug] = {}
    for drug in vocab.drugs.values():
        for name in (drug.id, *drug.terms):
            index.setdefault(key(name), drug)
    return index


@lru_cache(maxsize=4)
def _class_index(vocab: Vocabulary) -> dict[str, DrugClass]:
    index: dict[str, DrugClass] = {}
    for cls in vocab.classes.values():
        for name in (cls.label, cls.id.replace("_", " "), *cls.terms):
            index.setdefault(key(name), cls)
    return index
