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
