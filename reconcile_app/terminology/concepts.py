"""Clinical concepts other than drugs (vaccines, allergens, ...): one entry per concept with its names, each sourced (data/*.json)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
KIND_FILES = {"immunization": "immunizations.json", "allergen": "allergens.json"}


@dataclass(frozen=True)
class Concept:
    id: str
    kind: str  # "immunization", "allergen", ...
    name: str  # what the extractor reports ("influenza vaccine")
    source: str
    diseases: dict[str, str]  # vaccines: disease word -> source key ("flu and covid shots" names two vaccines by disease)
    members: dict[str, str]  # allergen families: the family's names and member drugs or foods -> source key


@dataclass(frozen=True, eq=False)  # hashed by identity: one loaded set per process
class Concepts:
    by_kind: dict[str, tuple[Concept, ...]]
    sources: dict[str, str]  # "kind:source key" -> citation

    def of_kind(self, kind: str) -> tuple[Concept, ...]:
        return self.by_kind.get(kind, ())

    def source_of(self, kind: str, source_key: str) -> str:
        return self.sources.get(f"{kind}:{source_key}", source_key)


@lru_cache(maxsize=1)
def load_concepts() -> Concepts:
    by_kind: dict[str, tuple[Concept, ...]] = {}
    sources: dict[str, str] = {}
    for kind, name in KIND_FILES.items():
        data = json.loads((DATA_DIR / name).read_text(encoding="utf-8"))
        by_kind[kind] = tuple(
            Concept(r["id"], kind, r["name"], r["source"], dict(r.get("diseases", {})), dict(r.get("members", {})))
            for r in data["concepts"]
        )
        sources.update({f"{kind}:{k}": v for k, v in data.get("sources", {}).items()})
    return Concepts(by_kind, sources)


def vaccine_names_by_disease() -> dict[str, str]:
    """Disease word -> the vaccine's name ("shingles" -> "zoster vaccine")."""
    return {word: c.name for c in load_concepts().of_kind("immunization") for word in c.diseases}


def allergen_families() -> dict[str, tuple[str, ...]]:
    """Allergen family name -> its names and member drugs or foods ("penicillin" -> penicillin, amoxicillin, ampicillin)."""
    return {c.name: tuple(c.members) for c in load_concepts().of_kind("allergen") if c.members}


SNOMED = "http://snomed.info/sct"
ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"


@dataclass(frozen=True)
class ConditionCodes:
    """A condition concept's codes (SNOMED CT codes, ICD-10-CM category prefixes) and the lay terms it adds."""

    id: str
    snomed: frozenset[str]
    icd10cm: tuple[str, ...]  # without dots: "M1A" covers M1A.0710
    terms: tuple[str, ...]
    source: str


@lru_cache(maxsize=1)
def condition_codes() -> dict[str, ConditionCodes]:
    """Concept id -> its codes, from data/conditions.json."""
    data = json.loads((DATA_DIR / "conditions.json").read_text(encoding="utf-8"))
    return {r["id"]: ConditionCodes(r["id"], frozenset(r["snomed"]), tuple(c.replace(".", "").upper() for c in r["icd10cm"]),
                                    tuple(r.get("terms", ())), r["source"]) for r in data["concepts"]}


@lru_cache(maxsize=4096)
def conditions_coded(system: str, code: str) -> frozenset[str]:
    """The concepts a coding names: an exact SNOMED CT code, or an ICD-10-CM code under one of a concept's categories.
    Codes are the record's own words for the condition, so a long or missing display still finds its concept."""
    if system == SNOMED:
        return frozenset(c.id for c in condition_codes().values() if code in c.snomed)
    if system == ICD10CM:
        flat = code.replace(".", "").upper()
        return frozenset(c.id for c in condition_codes().values() if any(flat.startswith(p) for p in c.icd10cm))
    return frozenset()
