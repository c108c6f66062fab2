"""The citation ranker: which record entries a reviewer must open for a finding, ranked from its words (pure)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from reconcile_app.core.linear import LinearModel, load_model
from reconcile_app.fhir.clinical import ClinicalEntry, ClinicalRecord, State
from reconcile_app.reconciliation.knowledge import Knowledge, RedFlag, has_phrase, load_knowledge, norm
from reconcile_app.reconciliation.matching import (
    RecordIndex, allergens_in_text, concepts_in_text, content_words, drugs_in_text, procedures_in_text,
    sites_in_text, stems, vaccines_in_text,
)
from reconcile_app.narrative.types import MemoryDraft, Subject
from reconcile_app.reconciliation.types import DISCREPANCY_KINDS, Citation, FindingDraft

CITE_PATH = Path(__file__).resolve().parent.parent / "learned" / "cite.json"
# The record types a memory of each category is about (a symptom belongs to a condition, a reading to an observation).
OWN_TYPES = {
    "medication": ("MedicationRequest", "MedicationStatement"), "allergy": ("AllergyIntolerance",),
    "condition": ("Condition",), "symptom": ("Condition",), "procedure": ("Procedure",), "immunization": ("Immunization",),
    "measurement": ("Observation",), "care_activity": ("CarePlan",),
}
# Hand weights: a direct naming outranks a link through a table, which outranks shared words; a current entry is
# what a reviewer opens first. Used when no learned model is shipped (and as the baseline the trainer must beat).
HAND_WEIGHTS = {
    "drug_name": 3.0, "drug_class": 1.5, "interacts": 2.5, "treats": 1.0, "indication": 1.5, "concept": 3.0, "related": 1.0,
    "flag_condition": 2.0, "flag_class": 1.5, "flag_lab": 1.5, "measure": 3.0, "measure_condition": 1.5, "concept_lab": 1.0,
    "interaction_lab": 2.0, "allergen": 3.0, "allergy_class": 2.0, "vaccine": 3.0, "procedure": 3.0, "site": 1.0,
    "display_word": 1.5, "plan_addresses": 1.5, "plan_terms": 1.5, "plan_words": 0.5, "own_type": 0.5, "state:historical": -0.5,
    "state:inactive": -1.5, "encounter_diagnosis": -0.3, "older_reading": -3.0,
}
HAND_THRESHOLD = 2.5
# RxNorm dose-form and strength words and SNOMED semantic-tag words: they name no particular drug or problem, so sharing
# one is no link (a record's "Oral Tablet" is not what "a tablet" means). Words of 5+ letters only (content_words keeps 4+).
_DISPLAY_NOISE = frozenset({
    "oral", "tablet", "capsule", "solution", "suspension", "injection", "injector", "transdermal", "system", "extended",
    "release", "delayed", "topical", "inhalation", "inhaler", "powder", "spray", "patch", "prefilled", "syringe", "cartridge",
    "chewable", "hydrochloride", "sodium", "potassium", "carbonate", "sulfate", "acetate", "tartrate", "succinate", "calcium",
    "disorder", "finding", "disease", "chronic", "condition", "problem", "medication", "daily", "units", "actuat", "metered",
})

MAX_ADDED = 2  # a nurse opens a handful: the rules' own citations first, then at most this many from the ranker
# Measured on the validation split: a cap of 3 informed 2 more scenarios of 192 but cost resource precision 0.617 -> 0.601;
# a third only at p >= 0.3 informed none more (precision 0.610). The coach's question as "q:" links (branch wt_cite2_question)
# informed none more out of fold and one fewer on validation.
MAX_CITATIONS = 6  # as the rules' verdicts (rules/verdict.py): never more than this on one finding
# Which discrepancies get ranked citations: "raised" (the judge raised them without a rules discrepancy), "uncited" (those
# and rules discrepancies citing nothing) or "all". Measured on the validation split: "all" informed 3 more scenarios of 192
# than "raised" but cost 5 in kind accuracy (the informed finding speaks for its session) and 0.11 resource precision.
SCOPE = "uncited"
# Outside the scope, a rules discrepancy that already cites gets at most one more entry, one the learned model rates at
# least this likely (None: none). The rules' own citations stay first. Off: on the validation split at 0.6 it informed no
# more scenarios and cost kind accuracy 0.841 -> 0.828 (the newly informed finding speaks for its session).
STRONG: float | None = None


@dataclass
class Mentions:
    """What a statement names, through the shared terminology and the sourced tables."""

    drugs: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    concepts: set[str] = field(default_factory=set)
    related: set[str] = field(default_factory=set)
    measures: set[str] = field(default_factory=set)
    allergens: set[str] = field(default_factory=set)
    vaccines: set[str] = field(default_factory=set)
    procedures: set[str] = field(default_factory=set)
    sites: set[str] = field(default_factory=set)
    flags: list[RedFlag] = field(default_factory=list)
    words: set[str] = field(default_factory=set)


def mentions_in(text: str, kb: Knowledge) -> Mentions:
    """The drugs (with their class closure), concepts, measures, allergens, vaccines, procedures, sites and red flags said."""
    mention = drugs_in_text(text, kb)
    m = Mentions()
    for d in mention.drugs:
        m.drugs |= {d.name, *d.components}
        m.classes |= kb.drug_classes(d)
    m.classes |= kb.class_closure(set(mention.lay_classes))
    m.concepts = concepts_in_text(text, kb)
    m.related = {r for c in m.concepts if c in kb.conditions for r in kb.conditions[c].related} - m.concepts
    normed = norm(text)
    m.measures = {k for k, ms in kb.measures.items() if any(has_phrase(normed, norm(t).strip()) for t in ms.terms)}
    m.allergens, m.vaccines = allergens_in_text(text, kb), vaccines_in_text(text, kb)
    m.procedures, m.sites = procedures_in_text(text, kb), sites_in_text(text, kb)
    m.flags = kb.red_flags_in(text)
    m.words = stems(content_words(text))
    return m


def _partners(m: Mentions, kb: Knowledge) -> tuple[set[str], set[str]]:
    """Interaction partners of what was said (class:x, drug:y, condition:z keys) and the labs the rows name."""
    mine = {f"class:{c}" for c in m.classes} | {f"drug:{d}" for d in m.drugs}
    others: set[str] = set()
    labs: set[str] = set()
    for row in kb.interactions:
        for own, other in ((row.a, row.b), (row.b, row.a)):
            if own in mine:
                others.add(other)
                labs |= set(row.loinc)
    return others, labs


def _med_features(me_names: set[str], me_classes: set[str], m: Mentions, partners: set[str], kb: Knowledge) -> dict[str, float]:
    f: dict[str, float] = {}
    if me_names & m.drugs:
        f["drug_name"] = 1.0
    elif me_classes & m.classes:
        f["drug_class"] = 1.0
    if {f"class:{c}" for c in me_classes} & partners or {f"drug:{n}" for n in me_names} & partners:
        f["interacts"] = 1.0
    if {i for c in me_classes if c in kb.classes for i in kb.classes[c].indications} & (m.concepts | m.related):
        f["treats"] = 1.0
    if {c for flag in m.flags for c in flag.classes} & me_classes:
        f["flag_class"] = 1.0
    return f


def _condition_features(concepts: set[str], m: Mentions, partners: set[str], indications: set[str], site_hit: bool,
                        kb: Knowledge) -> dict[str, float]:
    f: dict[str, float] = {}
    if concepts & m.concepts:
        f["concept"] = 1.0
    elif concepts & m.related:
        f["related"] = 1.0
    if concepts & indications:
        f["indication"] = 1.0
    if {f"condition:{c}" for c in concepts} & partners:
        f["interacts"] = 1.0
    if {c for flag in m.flags for c in flag.conditions} & concepts:
        f["flag_condition"] = 1.0
    if {c for k in m.measures for c in kb.measures[k].conditions} & concepts:
        f["measure_condition"] = 1.0
    if site_hit:
        f["site"] = 1.0
    return f


def _observation_features(codes: set[str], m: Mentions, labs: set[str], kb: Knowledge) -> dict[str, float]:
    f: dict[str, float] = {}
    if {c for k in m.measures for c in kb.measures[k].loinc} & codes:
        f["measure"] = 1.0
    if {c for k in m.concepts if k in kb.conditions for c in kb.conditions[k].loinc} & codes:
        f["concept_lab"] = 1.0
    if labs & codes:
        f["interaction_lab"] = 1.0
    if {c for flag in m.flags for c in flag.loinc} & codes:
        f["flag_lab"] = 1.0
    return f


def _careplan_features(entry: ClinicalEntry, text: str, m: Mentions, linked_conditions: set[str], kb: Knowledge) -> dict[str, float]:
    f: dict[str, float] = {}
    refs = {str(a.get("reference", "")).split("/")[-1] for a in entry.raw.get("addresses") or [] if isinstance(a, dict)}
    if refs & linked_conditions or concepts_in_text(str(entry.raw.get("title") or entry.display), kb) & m.concepts:
        f["plan_addresses"] = 1.0
    normed = norm(text)
    terms = {t for k in m.measures for t in kb.measures[k].careplan_terms} | m.drugs
    if any(has_phrase(normed, norm(t).strip()) for t in terms if t):
        f["plan_terms"] = 1.0
    shared = len(m.words & stems(content_words(text)))
    if shared:
        f["plan_words"] = float(min(shared, 4))
    return f


def linked_entries(text: str, record: ClinicalRecord, kb: Knowledge) -> dict[tuple[str, str], tuple[ClinicalEntry, dict[str, float]]]:
    """Every visible record entry the words link to, with the named features of the link (no link: absent)."""
    idx = RecordIndex(record, kb)
    m = mentions_in(text, kb)
    partners, labs = _partners(m, kb)
    out: list[tuple[ClinicalEntry, dict[str, float]]] = []
    said = {w for w in m.words if len(w) >= 5 and w not in _DISPLAY_NOISE}
    named_meds = [me for me in idx.meds if me.entry.state != State.ERROR and me.names & m.drugs]
    indications = {i for me in named_meds for c in me.classes if c in kb.classes for i in kb.classes[c].indications}
    indications |= {i for c in m.classes if c in kb.classes for i in kb.classes[c].indications}
    for me in idx.meds:
        out.append((me.entry, _med_features(me.names, me.classes, m, partners, kb) | _display_word(me.entry, said)))
    site_conditions = {c for s in kb.sites if s.id in m.sites for c in s.conditions}
    for ce in idx.conditions:
        site_hit = bool(m.sites and (sites_in_text(ce.entry.display, kb) & m.sites or ce.concepts & site_conditions))
        out.append((ce.entry, _condition_features(ce.concepts, m, partners, indications, site_hit, kb) | _display_word(ce.entry, said)))
    linked = {e.id for e, f in out if e.resource_type == "Condition" and f and e.state == State.ACTIVE}
    for ae in idx.allergies:
        hit = {"allergen": 1.0} if ae.allergens & m.allergens or ae.drug_names & m.drugs else {}
        if not hit and ae.classes & m.classes:
            hit = {"allergy_class": 1.0}
        out.append((ae.entry, hit))
    for entry, families in idx.vaccines:
        out.append((entry, {"vaccine": 1.0} if families & m.vaccines else {}))
    for entry, pids, psites in idx.procedures:
        f = {"procedure": 1.0} if pids & m.procedures else {}
        if psites & m.sites:
            f["site"] = 1.0
        out.append((entry, f))
    for entry, ptext in idx.careplans:
        out.append((entry, _careplan_features(entry, ptext, m, linked, kb)))
    out += _observations(idx, m, labs, kb)
    found: dict[tuple[str, str], tuple[ClinicalEntry, dict[str, float]]] = {}
    for e, f in out:
        if f and e.state != State.ERROR:
            found.setdefault((e.resource_type, e.id), (e, f))
    return found


def _display_word(entry: ClinicalEntry, said: set[str]) -> dict[str, float]:
    """A distinctive word of the entry's own display said outright: links a drug or problem the tables do not know."""
    return {"display_word": 1.0} if said & _display_stems(entry.display) else {}


@lru_cache(maxsize=16384)
def _display_stems(display: str) -> frozenset[str]:
    """The stemmed content words of a record display, kept per display: every linking reads every entry's."""
    return frozenset(stems(content_words(display)))


def _through_cited(record: ClinicalRecord, cited: Sequence[Citation], kb: Knowledge) -> dict[tuple[str, str], dict[str, float]]:
    """Entries a reviewer opens beside what the finding already cites: the condition a cited drug treats, the care plan
    addressing a cited condition or naming a cited drug, the drug that treats a cited condition."""
    entries = [record.get(c.resource_type, c.id) for c in cited]
    text = " ".join(e.display for e in entries if e is not None)
    if not text:
        return {}
    own = {(c.resource_type, c.id) for c in cited}
    return {key: {f"c:{k}": v for k, v in f.items()} for key, (_, f) in linked_entries(text, record, kb).items() if key not in own}


Links = dict[tuple[str, str], tuple[ClinicalEntry, dict[str, float]]]


def candidate_features(text: str, category: str, record: ClinicalRecord, kb: Knowledge | None = None, *,
                       session_text: str = "", cited: Sequence[Citation] = (),
                       session_links: Links | None = None) -> list[tuple[ClinicalEntry, dict[str, float]]]:
    """Candidates with named features: links from the statement itself, links only the rest of the session's words make ("s:"),
    through what the finding already cites ("c:"), and every current care plan (the plan a reviewer checks a change against)."""
    kb = kb or load_knowledge()
    feats: dict[tuple[str, str], dict[str, float]] = {}
    entries: dict[tuple[str, str], ClinicalEntry] = {}
    for key, (e, f) in linked_entries(text, record, kb).items():
        entries[key], feats[key] = e, dict(f)
    if session_links is None and session_text:
        session_links = linked_entries(session_text, record, kb)
    for key, (e, f) in (session_links or {}).items():
        entries[key] = e
        own = feats.setdefault(key, {})
        own.update({f"s:{k}": v for k, v in f.items() if k not in own})  # what only the rest of the session says
    for key, f in _through_cited(record, cited, kb).items():
        entry = record.get(*key)
        if entry is not None:
            entries[key] = entry
            feats.setdefault(key, {}).update(f)
    plans = [e for e in record.of_type("CarePlan", states=[State.ACTIVE])]
    for e in plans:
        key = (e.resource_type, e.id)
        entries[key] = e
        feats.setdefault(key, {})["plan_current"] = 1.0
        if len(plans) == 1:
            feats[key]["plan_only"] = 1.0
    return [(entries[k], _context(entries[k], feats[k], category)) for k in sorted(feats)]


def _observations(idx: RecordIndex, m: Mentions, labs: set[str], kb: Knowledge) -> list[tuple[ClinicalEntry, dict[str, float]]]:
    """The newest observation of each linked code stands for its history (the scoring and the reviewer see one series)."""
    out: list[tuple[ClinicalEntry, dict[str, float]]] = []
    seen: set[str] = set()
    for newest, codes in _newest_observations(idx):
        if newest.id in seen:
            continue
        f = _observation_features(set(codes), m, labs, kb)
        if f:
            seen.add(newest.id)
            out.append((newest, f))
    return out


def _newest_observations(idx: RecordIndex) -> tuple[tuple[ClinicalEntry, frozenset[str]], ...]:
    """Each observation code's newest entry with its codes, in code order; kept on the index, which is built once per
    record (sorting a long record's codes for every statement and session linked was most of the linking's cost)."""
    held = idx.__dict__.get("_newest_observations")
    if held is None:
        held = idx.__dict__["_newest_observations"] = tuple(
            (entries[0], frozenset(c.code for c in entries[0].codings)) for _code, entries in sorted(idx.observations.items()))
    return held


def _context(entry: ClinicalEntry, f: dict[str, float], category: str) -> dict[str, float]:
    """The entry's state and type against the memory's category, beside its links."""
    out = dict(f)
    if entry.resource_type in OWN_TYPES.get(category, ()):
        out["own_type"] = 1.0
    if entry.state != State.ACTIVE:
        out[f"state:{entry.state}"] = 1.0
    if "encounter-diagnosis" in entry.category:
        out["encounter_diagnosis"] = 1.0
    out[f"type:{entry.resource_type}"] = 1.0
    return out


@dataclass(frozen=True)
class Ranked:
    entry: ClinicalEntry
    score: float
    why: tuple[str, ...]


@dataclass
class CitationRanker:
    """Scores candidates with the learned model when shipped (learned/cite.json), else the hand weights.

    A finding the judge raises without a rules discrepancy (or a rules discrepancy that cites nothing) still needs
    the record entries a nurse checks before acting: the drug the patient named and the drug it interacts with, the
    condition a symptom or a reading belongs to, the observation history of a measurement, the care plan that governs it.
    Each candidate entry gets named features linking the statement to it through the shared terminology (drug names and
    classes, condition concepts, measures, allergens, vaccines, procedures, body sites) and the sourced tables (drug
    interactions, indications, red flags, measurement conditions, care plans addressing a condition); a score ranks them.
    The score is a small logistic model over those features (learned/cite.json, evaluation/training_cite.py) when it is
    shipped, else HAND_WEIGHTS. Entered-in-error entries are never candidates.
    """

    model: LinearModel | None = None

    @classmethod
    def load(cls, path: Path = CITE_PATH) -> CitationRanker:
        return cls(load_model(str(path)) if path.exists() else None)

    @property
    def version(self) -> str:
        # the scope and the cap change what findings cite, so they key run idempotency with the weights
        setting = f"{SCOPE}.{MAX_ADDED}.{STRONG}"
        if self.model is not None:
            return f"cite.{self.model.fingerprint()[:6]}.{setting}"
        return f"cite.hand.{hashlib.sha256(json.dumps(HAND_WEIGHTS, sort_keys=True).encode()).hexdigest()[:6]}.{setting}"

    @property
    def threshold(self) -> float:
        return float(self.model.threshold) if self.model is not None else HAND_THRESHOLD

    def score(self, features: dict[str, float]) -> tuple[float, tuple[str, ...]]:
        if self.model is not None:
            x = self.model.featurize({}, features)
            return self.model.positive(x), tuple(name.removeprefix("f:") for name, _ in self.model.explain(x, top=3))
        parts = sorted(((HAND_WEIGHTS.get(k, 0.0) * v, k) for k, v in features.items()), reverse=True)
        return sum(w for w, _ in parts), tuple(k for w, k in parts[:3] if w > 0)

    def rank(self, text: str, category: str, record: ClinicalRecord, *, session_text: str = "",
             cited: Sequence[Citation] = (), session_links: Links | None = None) -> list[Ranked]:
        ranked = [Ranked(e, *self.score(f)) for e, f in candidate_features(text, category, record, session_text=session_text,
                                                                           cited=cited, session_links=session_links)]
        return sorted(ranked, key=lambda r: (-r.score, r.entry.resource_type, r.entry.id))

    def extra(self, text: str, category: str, record: ClinicalRecord, cited: Sequence[Citation], *, session_text: str = "",
              limit: int = MAX_ADDED, threshold: float | None = None, session_links: Links | None = None) -> list[Ranked]:
        """The best-ranked entries over the threshold that the finding does not cite yet (by id or by code), at most `limit`."""
        have = {(c.resource_type, c.id) for c in cited} | {(c.resource_type, c.system, c.code) for c in cited if c.code}
        out: list[Ranked] = []
        for r in self.rank(text, category, record, session_text=session_text, cited=cited, session_links=session_links):
            if len(out) >= limit or r.score < (self.threshold if threshold is None else threshold):
                break
            coding = r.entry.primary_coding
            keys = {(r.entry.resource_type, r.entry.id)} | ({(r.entry.resource_type, coding.system, coding.code)} if coding else set())
            if keys & have:
                continue
            have |= keys
            out.append(r)
        return out


def add_citations(ranker: CitationRanker, memories: Sequence[MemoryDraft], drafts: Sequence[FindingDraft], record: ClinicalRecord,
                  *, scope: str = SCOPE, strong: float | None = STRONG) -> None:
    """After the judge: each discrepancy in scope (see SCOPE) gets the ranker's best entries after its own citations,
    with a note saying why each was added. The rest of the session's words count too (a turn answers what came before)."""
    session_text = " ".join(dict.fromkeys(m.quote for m in memories if m.quote and m.subject == Subject.PATIENT))
    session_links: Links | None = None  # the session's words are linked once, for every finding of the session
    for m, d in zip(memories, drafts):
        if d.kind not in DISCREPANCY_KINDS:
            continue
        room = max(0, MAX_CITATIONS - len(d.citations))
        if _in_scope(d, scope):
            limit, threshold = min(room, MAX_ADDED), None
        elif ranker.model is not None and strong is not None:
            limit, threshold = min(room, 1), strong  # a rules finding that cites: only the one entry the model is sure of
        else:
            continue
        if session_links is None:
            session_links = linked_entries(session_text, record, load_knowledge()) if session_text else {}
        for r in ranker.extra(m.quote, m.category, record, d.citations, session_text=session_text, limit=limit, threshold=threshold,
                              session_links=session_links):
            d.citations.append(Citation.of(r.entry))
            d.gate_notes.append(f"cited {r.entry.resource_type}/{r.entry.id} ({ranker.version} {r.score:.2f}: {', '.join(r.why)})"[:200])


def _in_scope(draft: FindingDraft, scope: str) -> bool:
    raised = draft.rule.startswith("judge-raise")
    return scope == "all" or raised or (scope == "uncited" and not draft.citations)
