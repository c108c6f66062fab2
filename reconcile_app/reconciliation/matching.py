"""Pure matching of memory mentions to record resources: by code, name, alias and drug class, status-aware."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from rapidfuzz import fuzz, process

from reconcile_app.fhir.clinical import ClinicalEntry, ClinicalRecord, Coding, State
from reconcile_app.terminology.concepts import conditions_coded
from reconcile_app.terminology.lexicon import drugs_named_in

from .knowledge import Drug, Knowledge, has_phrase, load_knowledge, norm, regex_text

LOINC = "http://loinc.org"
CVX = "http://hl7.org/fhir/sid/cvx"

# words that say nothing about which condition a display names (SNOMED semantic tags and qualifiers)
_GENERIC_WORDS = {
    "disorder", "finding", "disease", "chronic", "acute", "syndrome", "situation", "procedure", "stage", "type",
    "mellitus", "essential", "primary", "secondary", "history", "of", "the", "and", "with", "without", "due", "to",
    "in", "on", "by", "for", "left", "right", "body", "mass", "index", "severe", "mild", "moderate", "unspecified",
    "my", "a", "an", "i", "im", "it", "is", "was", "have", "had", "has", "been", "new", "now", "got", "get",
}
_STAGE = re.compile(r"\b(stage|type|grade|class)\s+(\d|i{1,3}v?|iv|v)\b")
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5"}


# --- mentions ---------------------------------------------------------------------------------


@dataclass
class DrugMention:
    drugs: list[Drug] = field(default_factory=list)
    lay_classes: set[str] = field(default_factory=set)  # classes named by a lay term ("water pill")
    raw_names: set[str] = field(default_factory=set)  # unknown words the patient used as a drug name

    @property
    def names(self) -> set[str]:
        return {d.name for d in self.drugs} | self.raw_names

    def __bool__(self) -> bool:
        return bool(self.drugs or self.lay_classes or self.raw_names)


@lru_cache(maxsize=1)
def _drug_vocab() -> dict[str, Drug]:
    kb = load_knowledge()
    vocab: dict[str, Drug] = {}
    for term, drug in kb.drug_terms:
        if " " not in term and len(term) >= 6:
            vocab.setdefault(term, drug)
    return vocab


@lru_cache(maxsize=8192)
def _fuzzy_drug(token: str) -> Drug | None:
    """Misspellings ("lisinipril", "glipazide"): a close match among long single-word drug names only."""
    if len(token) < 6 or not token.isalpha():
        return None
    vocab = _drug_vocab()
    hit = process.extractOne(token, vocab.keys(), scorer=fuzz.ratio, score_cutoff=84)
    return vocab[hit[0]] if hit else None


def terminology_drugs(text: str) -> frozenset[str]:
    """The drugs a text names by any name the shared terminology knows (generic, brand, package name)."""
    return drugs_named_in(text)


def drugs_in_text(text: str, kb: Knowledge | None = None, *, fuzzy: bool = True) -> DrugMention:
    drugs, classes = _drugs_in_text(text or "", fuzzy)
    return DrugMention(drugs=list(drugs), lay_classes=set(classes))


@lru_cache(maxsize=16384)
def _drugs_in_text(text: str, fuzzy: bool) -> tuple[tuple[Drug, ...], frozenset[str]]:
    kb = load_knowledge()
    normed = norm(text)
    # plural brand/generic names ("Norcos", "Advils") name the same drug
    normed = " " + " ".join(w[:-1] if w.endswith("s") and len(w) > 4 and not w.endswith("ss") else w for w in normed.split()) + " " + normed
    mention = DrugMention()
    consumed = normed
    drug_rows, class_rows = _TermIndex.of(kb).candidates(normed)
    for term, drug in drug_rows:  # the table's order (longest first), only the rows whose term the text holds
        if has_phrase(consumed, term):
            if drug not in mention.drugs:
                mention.drugs.append(drug)
            consumed = consumed.replace(f" {term} ", " | ")
    hits = [(term, cid) for term, cid in class_rows if has_phrase(consumed, term)]
    for term, cid in hits:
        if has_phrase(consumed, term) or any(t == term for t, c in hits if c in mention.lay_classes):
            mention.lay_classes.add(cid)
    for term, _ in hits:
        consumed = consumed.replace(f" {term} ", " | ")
    if fuzzy:
        for token in consumed.split():
            drug = _fuzzy_drug(token)
            if drug and drug not in mention.drugs:
                mention.drugs.append(drug)
        for drug in _fuzzy_phrase_drugs(consumed):
            if drug not in mention.drugs:
                mention.drugs.append(drug)
    return tuple(mention.drugs), frozenset(mention.lay_classes)


class _TermIndex:
    """The drug and lay class tables by term, to test only the rows whose term is a phrase of the text, in table order.

    Scanning every row of both tables (thousands of terms) for every new text was most of the cost of reading
    drugs. A row can only match if its term is a run of the text's words: replacing a matched term by " | " never
    makes a new run, because no term holds "|". Terms not in normal form (which a word run cannot equal) are
    always tested, so the result is the full scan's."""

    _built: dict[int, tuple[Knowledge, list, list, _TermIndex]] = {}

    def __init__(self, drug_terms: list[tuple[str, Drug]], class_terms: list[tuple[str, str]]) -> None:
        self.drug_terms, self.class_terms = drug_terms, class_terms
        self.drug_at: dict[str, list[int]] = {}
        self.class_at: dict[str, list[int]] = {}
        self.always_drug: list[int] = []
        self.always_class: list[int] = []
        for rows, at, always in ((drug_terms, self.drug_at, self.always_drug), (class_terms, self.class_at, self.always_class)):
            for i, (term, _) in enumerate(rows):
                if _normal_form(term):
                    at.setdefault(term, []).append(i)
                elif term:
                    always.append(i)
        self.runs = _WordRuns((*self.drug_at, *self.class_at))

    @classmethod
    def of(cls, kb: Knowledge) -> _TermIndex:
        held = cls._built.get(id(kb))
        if held is None or held[1] is not kb.drug_terms or held[2] is not kb.class_terms:
            held = (kb, kb.drug_terms, kb.class_terms, cls(kb.drug_terms, kb.class_terms))
            cls._built[id(kb)] = held  # holds kb: its id is not reused while cached
        return held[3]

    def candidates(self, normed: str) -> tuple[list[tuple[str, Drug]], list[tuple[str, str]]]:
        drug_rows, class_rows = set(self.always_drug), set(self.always_class)
        for phrase in self.runs.of(normed):
            drug_rows.update(self.drug_at.get(phrase, ()))
            class_rows.update(self.class_at.get(phrase, ()))
        return [self.drug_terms[i] for i in sorted(drug_rows)], [self.class_terms[i] for i in sorted(class_rows)]


def _normal_form(term: str) -> bool:
    """A term a text's word run can equal: its words between single spaces (norm's form, without the padding)."""
    return bool(term) and term == " ".join(term.split())


class _WordRuns:
    """The runs of a normalized text's words that could be terms of a table: a term in normal form is a phrase of
    the text exactly when it equals one of its word runs, and a run that begins no term cannot be extended into one."""

    def __init__(self, terms: Iterable[str]) -> None:
        terms = tuple(terms)
        self.longest = max((len(t.split()) for t in terms), default=1)
        # every run of leading words of the terms ("blood", "blood pressure" for "blood pressure cuff")
        self.prefixes = frozenset(" ".join(words[:n]) for words in (t.split() for t in terms) for n in range(1, len(words) + 1))

    def of(self, normed: str) -> Iterator[str]:
        """Each run of the text's words that begins some term, shortest first from each start."""
        words = normed.split()
        for start in range(len(words)):
            phrase = ""
            for end in range(start, min(start + self.longest, len(words))):
                phrase = f"{phrase} {words[end]}" if phrase else words[end]
                if phrase not in self.prefixes:
                    break  # no term begins with these words, so none longer from this start either
                yield phrase


@lru_cache(maxsize=None)
def _multiword_terms() -> tuple[tuple[str, int, Drug], ...]:
    kb = load_knowledge()
    return tuple((t, len(t.split()), d) for t, d in kb.drug_terms if " " in t and len(t) >= 10 and t.replace(" ", "").isalpha())


@lru_cache(maxsize=None)
def _multiword_by_shape() -> dict[tuple[int, str, int], list[int]]:
    """The multi-word terms' positions in _multiword_terms() by (words, first letter, length): a window of the text
    can only be one edit from a term of its own word count and first letter whose length is within one of its own."""
    by_shape: dict[tuple[int, str, int], list[int]] = {}
    for at, (term, k, _drug) in enumerate(_multiword_terms()):
        by_shape.setdefault((k, term[0], len(term)), []).append(at)
    return by_shape


def _fuzzy_phrase_drugs(consumed: str) -> list[Drug]:
    """Misspelled multi-word names (a vowel off in an herbal or brand name): one edit over the whole phrase, 10+ letters.

    Each window of the text is compared only with the terms of its shape (_multiword_by_shape), not every term with
    every window; the drugs come out in the table's order, one per matching term, as a scan of the table gives them."""
    tokens = [t for t in consumed.split() if t != "|"]
    terms, by_shape = _multiword_terms(), _multiword_by_shape()
    matched: set[int] = set()
    for k in {k for k, _first, _length in by_shape}:
        for i in range(len(tokens) - k + 1):
            window = " ".join(tokens[i:i + k])
            for length in (len(window) - 1, len(window), len(window) + 1):
                for at in by_shape.get((k, window[0], length), ()):
                    if at not in matched and window != terms[at][0] and _one_edit(window, terms[at][0]):
                        matched.add(at)
    return [terms[at][2] for at in sorted(matched)]


def _one_edit(a: str, b: str) -> bool:
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    if len(a) > len(b):
        a, b = b, a
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    return a[i:] == b[i + 1:]


@lru_cache(maxsize=None)
def _terms(table: str) -> tuple[tuple[str, str], ...]:
    """(normalized term, id) pairs of a knowledge table, normalized once."""
    kb = load_knowledge()
    rows = {
        "conditions": [(t, c.id) for c in kb.conditions.values() for t in c.terms],
        "vaccines": [(t, v.id) for v in kb.vaccines for t in v.terms],
        "allergens": [(t, a.id) for a in kb.allergens for t in a.terms],
        "procedures": [(t, p.id) for p in kb.procedures for t in p.terms],
        "sites": [(t, x.id) for x in kb.sites for t in x.terms],
    }[table]
    return tuple((norm(t).strip(), i) for t, i in rows)


class _PhraseIndex:
    """A table's (normalized term, id) rows by term, so a text is looked up by its own word runs instead of testing
    every row of the table (thousands of terms) against it.

    A normalized text is its words between single spaces, so a term in normal form is a phrase of it exactly when
    the term equals one of its runs of words; a row whose term is not in normal form is always tested as before."""

    def __init__(self, rows: tuple[tuple[str, str], ...]) -> None:
        self.ids_at: dict[str, set[str]] = {}
        self.always: list[tuple[str, str]] = []
        for term, cid in rows:
            if _normal_form(term):
                self.ids_at.setdefault(term, set()).add(cid)
            elif term:
                self.always.append((term, cid))
        self.runs = _WordRuns(self.ids_at)

    def find(self, normed: str) -> set[str]:
        found = {i for t, i in self.always if has_phrase(normed, t)}
        for phrase in self.runs.of(normed):
            ids = self.ids_at.get(phrase)
            if ids:
                found |= ids
        return found


@lru_cache(maxsize=None)
def _phrase_index(table: str) -> _PhraseIndex:
    return _PhraseIndex(_terms(table))


@lru_cache(maxsize=32768)
def _found(table: str, text: str) -> frozenset[str]:
    return frozenset(_phrase_index(table).find(norm(text)))


def _find(table: str, text: str) -> set[str]:
    """The ids of the table's rows whose term is a phrase of the text (a new set: callers may change it)."""
    return set(_found(table, text))


@lru_cache(maxsize=16384)
def _concepts_cached(text: str) -> frozenset[str]:
    return frozenset(_find("conditions", text))


def concepts_in_text(text: str, kb: Knowledge | None = None) -> set[str]:
    found = set(_concepts_cached(text or ""))
    # a more specific concept wins over the generic one it contains ("prediabetes" is not "diabetes")
    if "prediabetes" in found and not re.search(r"(?<!pre)(?<!pre )diabet", regex_text(text).replace("prediabet", "")):
        found.discard("diabetes")
    if "never_smoker" in found or "ex_smoker" in found:
        found.discard("tobacco_use")
    return found


def coded_concepts(codings: tuple[Coding, ...] | list[Coding]) -> set[str]:
    """The condition concepts a record entry's codes name (terminology layer: SNOMED CT codes, ICD-10-CM categories),
    whatever its display says: a long display ("... without tophus, multiple sites") or none at all."""
    found: set[str] = set()
    for c in codings:
        found |= conditions_coded(c.system, c.code)
    return found


def stage_of(text: str) -> str:
    m = _STAGE.search(regex_text(text))
    if not m:
        return ""
    value = m.group(2)
    return f"{m.group(1)} {_ROMAN.get(value, value)}"


def content_words(text: str) -> set[str]:
    return {w for w in norm(text).split() if len(w) >= 4 and w not in _GENERIC_WORDS and not w[0].isdigit()}


def vaccines_in_text(text: str, kb: Knowledge | None = None) -> set[str]:
    found = _find("vaccines", text)
    if "flu_live" in found:
        found.discard("influenza")
    return found


def allergens_in_text(text: str, kb: Knowledge | None = None) -> set[str]:
    return _find("allergens", text)


def procedures_in_text(text: str, kb: Knowledge | None = None) -> set[str]:
    return _find("procedures", text)


def sites_in_text(text: str, kb: Knowledge | None = None) -> set[str]:
    return _find("sites", text)


# --- the record, indexed once per run ----------------------------------------------------------


@dataclass
class MedEntry:
    entry: ClinicalEntry
    names: set[str]
    classes: set[str]


@dataclass
class CondEntry:
    entry: ClinicalEntry
    concepts: set[str]
    words: set[str]
    stage: str


@dataclass
class AllergyEntry:
    entry: ClinicalEntry
    allergens: set[str]
    drug_names: set[str]
    classes: set[str]
    no_known: bool


@dataclass
class MedMatch:
    active: list[ClinicalEntry] = field(default_factory=list)
    historical: list[ClinicalEntry] = field(default_factory=list)
    error: list[ClinicalEntry] = field(default_factory=list)
    by_class_only: bool = False

    @property
    def any_visible(self) -> bool:
        return bool(self.active or self.historical)


NO_KNOWN_ALLERGY_CODES = {"716186003", "409137002", "428607008", "1150002"}


def careplan_text(entry: ClinicalEntry) -> str:
    """Title, description, activities (descriptions and codes) and notes of a CarePlan, from the raw resource."""
    raw = entry.raw or {}
    parts = [str(raw.get("title") or ""), str(raw.get("description") or "")]
    for activity in raw.get("activity") or []:
        if not isinstance(activity, dict):
            continue
        detail = activity.get("detail")
        if isinstance(detail, dict):
            parts.append(str(detail.get("description") or ""))
            code = detail.get("code")
            if isinstance(code, dict):
                parts.append(str(code.get("text") or ""))
                parts.extend(str(c.get("display") or "") for c in code.get("coding") or [] if isinstance(c, dict))
        for note in activity.get("progress") or []:
            if isinstance(note, dict):
                parts.append(str(note.get("text") or ""))
    for note in raw.get("note") or []:
        if isinstance(note, dict):
            parts.append(str(note.get("text") or ""))
    return ". ".join(p for p in parts if p)


def careplan_activities(entry: ClinicalEntry) -> list[str]:
    raw = entry.raw or {}
    out = []
    for activity in raw.get("activity") or []:
        detail = activity.get("detail") if isinstance(activity, dict) else None
        if isinstance(detail, dict):
            code = detail.get("code") if isinstance(detail.get("code"), dict) else {}
            text = " ".join(p for p in (str(detail.get("description") or ""), str(code.get("text") or "")) if p)
            if text:
                out.append(text)
    if raw.get("description"):
        out.append(str(raw["description"]))
    return out


@dataclass
class Restriction:
    careplan: ClinicalEntry
    text: str  # the restricting clause
    phrases: list[set[str]]  # each a set of words that must all appear in the memory
    soft: bool = False  # "limit X": only an excess of X conflicts


class RecordIndex:
    """The record as the rules engine sees it: entries with their drugs, concepts, allergens, sites.

    Built once per record object: `RecordIndex(record, kb)` returns the index already built for that
    record and knowledge base. A record is immutable and cached per snapshot (fhir.selectors), and every
    session of a patient is reconciled against the same one, so indexing it again per session (tens of
    milliseconds for a record of a thousand resources) would be repeated work."""

    def __new__(cls, record: ClinicalRecord, kb: Knowledge | None = None) -> RecordIndex:
        kb = kb or load_knowledge()
        built: dict[tuple[type, int], RecordIndex] = record.__dict__.setdefault("_record_indexes", {})
        index = built.get((cls, id(kb)))  # the index holds its kb, so the id is not reused while cached
        if index is None:
            index = super().__new__(cls)
            index._built = False
            built[(cls, id(kb))] = index
        return index

    def __init__(self, record: ClinicalRecord, kb: Knowledge | None = None) -> None:
        if self._built:
            return
        self.record = record
        self.kb = kb = kb or load_knowledge()
        self._cross_reactive = {c.id for c in kb.classes.values() if c.cross_reactive}
        self.meds: list[MedEntry] = []
        self.conditions: list[CondEntry] = []
        self.allergies: list[AllergyEntry] = []
        self.vaccines: list[tuple[ClinicalEntry, set[str]]] = []
        self.procedures: list[tuple[ClinicalEntry, set[str], set[str]]] = []
        self.careplans: list[tuple[ClinicalEntry, str]] = []
        self.observations: dict[str, list[ClinicalEntry]] = {}
        for entry in record.entries:
            self._add(entry)
        for values in self.observations.values():
            values.sort(key=lambda e: e.date, reverse=True)
        self.active_concepts: set[str] = set()
        for ce in self.conditions:
            if ce.entry.state == State.ACTIVE:
                self.active_concepts |= ce.concepts
        self.active_classes: set[str] = set()
        self.active_drug_names: set[str] = set()
        for me in self.meds:
            if me.entry.state == State.ACTIVE:
                self.active_classes |= me.classes
                self.active_drug_names |= me.names
        self._restrictions: list[Restriction] | None = None
        self._built = True  # last: an index whose build raised is built again on the next call

    def _add(self, entry: ClinicalEntry) -> None:
        """Index one record entry by what it names: drugs and classes, concepts, allergens, vaccine families, sites."""
        kb, rtype = self.kb, entry.resource_type
        names = " ".join([entry.display, *(c.display for c in entry.codings)])
        if rtype in ("MedicationRequest", "MedicationStatement"):
            self.meds.append(self._med_entry(entry, names))
        elif rtype == "Condition":
            self.conditions.append(CondEntry(entry, concepts_in_text(names, kb) | coded_concepts(entry.codings), content_words(entry.display),
                                             stage_of(entry.display)))
        elif rtype == "AllergyIntolerance":
            self.allergies.append(self._allergy_entry(entry, names))
        elif rtype == "Immunization":
            families = {v.id for v in kb.vaccines if any(c.code in v.cvx and c.system in (CVX, "") for c in entry.codings)}
            self.vaccines.append((entry, families | vaccines_in_text(names, kb)))
        elif rtype == "Procedure":
            self.procedures.append((entry, procedures_in_text(names, kb), sites_in_text(names, kb)))
        elif rtype == "CarePlan":
            self.careplans.append((entry, careplan_text(entry)))
        elif rtype == "Observation" and entry.state == State.ACTIVE:
            for c in entry.codings:
                self.observations.setdefault(c.code, []).append(entry)

    def _med_entry(self, entry: ClinicalEntry, names: str) -> MedEntry:
        mention = drugs_in_text(names, self.kb, fuzzy=False)
        drug_names = {d.name for d in mention.drugs}
        classes: set[str] = set()
        for d in mention.drugs:
            classes |= self.kb.drug_classes(d)
            drug_names |= set(d.components)
        first = next((w for w in norm(entry.display).split() if w.isalpha() and len(w) >= 4), "")
        if first:
            drug_names.add(first)
        return MedEntry(entry, drug_names, classes)

    def _allergy_entry(self, entry: ClinicalEntry, names: str) -> AllergyEntry:
        codes = {c.code for c in entry.codings}
        mention = drugs_in_text(names, self.kb, fuzzy=False)
        classes: set[str] = set()
        for d in mention.drugs:
            classes |= self.kb.drug_classes(d)
        allergen_ids = allergens_in_text(names, self.kb)
        for a in self.kb.allergens:
            if a.id in allergen_ids:
                classes |= set(a.classes)
        return AllergyEntry(entry, allergen_ids, {d.name for d in mention.drugs}, classes,
                            bool(codes & NO_KNOWN_ALLERGY_CODES) or "no known" in names.lower())

    # --- medications ---

    def match_meds(self, mention: DrugMention) -> MedMatch:
        out = MedMatch()
        names = mention.names
        class_hits: list[MedEntry] = []
        for me in self.meds:
            hit = bool(names & me.names)
            if not hit and not names and mention.lay_classes and me.classes & mention.lay_classes:
                class_hits.append(me)
                continue
            if hit:
                self._file(out, me.entry)
        if class_hits:
            out.by_class_only = True
            for me in class_hits:
                self._file(out, me.entry)
        return out

    @staticmethod
    def _file(out: MedMatch, entry: ClinicalEntry) -> None:
        if entry.state == State.ACTIVE:
            out.active.append(entry)
        elif entry.state == State.ERROR:
            out.error.append(entry)
        else:
            out.historical.append(entry)

    def meds_of_classes(self, classes: set[str], *, active_only: bool = True) -> list[ClinicalEntry]:
        return [me.entry for me in self.meds if me.classes & classes and (me.entry.state == State.ACTIVE or not active_only)]

    def meds_sharing_ingredient(self, drugs: list[Drug]) -> list[ClinicalEntry]:
        """Active record meds whose ingredient is a component of the mentioned combination (Norco -> acetaminophen)."""
        comps = {c for d in drugs for c in d.components}
        return [me.entry for me in self.meds if me.entry.state == State.ACTIVE and comps & me.names]

    # --- conditions ---

    def conditions_for(self, concepts: set[str], *, states: tuple[str, ...] = (State.ACTIVE,)) -> list[ClinicalEntry]:
        return [ce.entry for ce in self.conditions if ce.concepts & concepts and ce.entry.state in states]

    def match_condition(self, concepts: set[str], words: set[str]) -> list[CondEntry]:
        """Record conditions naming the same concept (or, without a known concept, sharing a content word)."""
        if concepts:
            return [ce for ce in self.conditions if ce.concepts & concepts]
        # without a known concept every named word must be in the display ("kidney stone" is not "chronic kidney disease")
        return [ce for ce in self.conditions if words and words <= ce.words]

    # --- observations ---

    def latest_observation(self, loincs: tuple[str, ...] | list[str]) -> ClinicalEntry | None:
        candidates = [self.observations[c][0] for c in loincs if c in self.observations]
        return max(candidates, key=lambda e: e.date) if candidates else None

    # --- care plans ---

    def careplans_mentioning(self, terms: list[str] | tuple[str, ...] | set[str]) -> list[ClinicalEntry]:
        out = []
        for entry, text in self.careplans:
            if entry.state != State.ACTIVE:
                continue
            normed = norm(text)
            if any(has_phrase(normed, norm(t).strip()) for t in terms if t):
                out.append(entry)
        return out

    def careplans_addressing(self, condition_ids: set[str]) -> list[ClinicalEntry]:
        out = []
        for entry, text in self.careplans:
            if entry.state != State.ACTIVE:
                continue
            refs = {str(a.get("reference", "")).split("/")[-1] for a in entry.raw.get("addresses") or [] if isinstance(a, dict)}
            title_concepts = concepts_in_text(str(entry.raw.get("title") or entry.display), self.kb)
            if refs & condition_ids or title_concepts & {c for ce in self.conditions if ce.entry.id in condition_ids for c in ce.concepts}:
                out.append(entry)
        return out

    def restrictions(self) -> list[Restriction]:
        if self._restrictions is None:
            self._restrictions = []
            for entry, _ in self.careplans:
                if entry.state != State.ACTIVE:
                    continue
                for activity in careplan_activities(entry):
                    for cue, clause in _restricting_clauses(activity, self.kb):
                        phrases = _restriction_phrases(clause)
                        if phrases:
                            self._restrictions.append(Restriction(entry, clause, phrases, soft=cue in self.kb.soft_cues))
        return self._restrictions

    # --- allergies ---

    def allergy_matches(self, allergen_ids: set[str], drugs: list[Drug]) -> list[AllergyEntry]:
        names = {d.name for d in drugs}
        classes: set[str] = set()
        for d in drugs:
            classes |= self.kb.drug_classes(d)
        out = []
        for ae in self.allergies:
            if ae.no_known:
                continue
            # a class links an allergy to another drug only where the class is cross-reactive (penicillins, NSAIDs, ACE
            # inhibitors...): warfarin and an ACE inhibitor are both teratogens, which says nothing about an allergy
            if ae.allergens & allergen_ids or ae.drug_names & names or (ae.classes & classes & self._cross_reactive):
                out.append(ae)
        return out

    @property
    def allergy_list(self) -> list[ClinicalEntry]:
        """What a reviewer opens to add an allergy: the active allergy entries (including 'No known allergy')."""
        return [ae.entry for ae in self.allergies if ae.entry.state == State.ACTIVE]

    # --- smoking ---

    def smoking_status(self) -> tuple[str, list[ClinicalEntry]]:
        """'never' / 'former' / 'current' / '' from the latest smoking-status observation or tobacco conditions."""
        sm = self.kb.smoking
        by_code = {row["code"]: row["status"] for row in sm["status_codes"]}
        obs = []
        for code in sm["loinc"]:
            obs.extend(self.observations.get(code, []))
        obs.sort(key=lambda e: e.date, reverse=True)
        for entry in obs:
            value = entry.raw.get("valueCodeableConcept") or {}
            codes = [c.get("code") for c in value.get("coding") or [] if isinstance(c, dict)]
            status = next((by_code[c] for c in codes if c in by_code), "") or _status_from_words(entry.detail)
            if status:
                return status, [entry]
        for ce in self.conditions:
            if ce.entry.state != State.ACTIVE:
                continue
            codes = {c.code for c in ce.entry.codings}
            status = next((by_code[c] for c in codes if c in by_code), "")
            if not status and ce.concepts & {"tobacco_use", "ex_smoker", "never_smoker"}:
                status = _status_from_words(ce.entry.display)
            if status:
                return status, [ce.entry]
        return "", []


    def alcohol_status(self) -> tuple[str, list[ClinicalEntry]]:
        """'none' / 'some' / 'heavy' / '' from the latest alcohol-use observation or an alcohol condition."""
        table = self.kb.smoking["alcohol"]
        obs = []
        for code in table["loinc"]:
            obs.extend(self.observations.get(code, []))
        obs.sort(key=lambda e: e.date, reverse=True)
        candidates = obs[:1] + [ce.entry for ce in self.conditions if ce.entry.state == State.ACTIVE and "alcohol" in ce.entry.display.lower()]
        for entry in candidates:
            text = regex_text(" ".join([entry.display if entry.resource_type == "Condition" else "", entry.detail]))
            for row in table["status_words"]:
                if any(w in text for w in row["words"]):
                    return row["status"], [entry]
            if entry.resource_type == "Observation" and entry.quantities:
                return ("none" if entry.quantities[0].value == 0 else "some"), [entry]
        return "", []


def _status_from_words(text: str) -> str:
    t = regex_text(text)
    if "never" in t:
        return "never"
    if "ex-smoker" in t or "former" in t or "ex smoker" in t:
        return "former"
    if "smok" in t:
        return "current"
    return ""


def _restricting_clauses(text: str, kb: Knowledge) -> list[tuple[str, str]]:
    lowered = regex_text(text)
    out: list[tuple[str, str]] = []
    for cue in kb.restriction_cues:
        start = lowered.find(cue)
        while start != -1:
            if start > 0 and lowered[start - 1].isalnum():  # whole words only ("no " is not in "piano ")
                start = lowered.find(cue, start + 1)
                continue
            clause = lowered[start + len(cue):]
            # a restriction that only holds under a condition ("do not drive when drowsy") cannot be checked
            # against a memory: skip it rather than flag every mention of the activity
            conditional = min((i for i in (_find_outside_parens(clause, b) for b in kb.conditional_breaks) if i != -1), default=-1)
            cut = len(clause)
            for br in kb.clause_breaks:
                # parenthesised examples stay inside the clause: only break outside parentheses
                idx = _find_outside_parens(clause, br)
                if idx != -1:
                    cut = min(cut, idx)
            piece = clause[:cut].strip()
            if piece and not (conditional != -1 and conditional <= cut):
                out.append((cue, piece))
            start = lowered.find(cue, start + 1)
    return out


def _find_outside_parens(text: str, needle: str) -> int:
    depth = 0
    for i in range(len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(needle, i):
            return i
    return -1


_RESTRICTION_STOP = {"use", "using", "take", "taking", "eat", "eating", "do", "doing", "any", "such", "as", "like", "the", "a",
                     "an", "of", "or", "and", "based", "all", "other", "e.g", "eg", "etc", "only", "to", "with", "your", "classes",
                     "class", "products", "foods", "food", "drinks", "activities", "activity", "exercise", "exercises"}


def _restriction_phrases(clause: str) -> list[set[str]]:
    """The things a clause restricts: its head noun phrase and each parenthesised example."""
    inner = re.findall(r"\(([^)]*)\)", clause)
    head = re.sub(r"\([^)]*\)", " ", clause)
    pieces = [head] + [p for group in inner for p in re.split(r"[,/]|\bor\b|\band\b", group)]
    phrases = []
    for piece in pieces:
        words = {w for w in norm(piece).split() if w not in _RESTRICTION_STOP and not w.isdigit()}
        if words:
            phrases.append(words)
    return phrases


@lru_cache(maxsize=1)
def _activity_groups() -> tuple[tuple[tuple[str, ...], frozenset[str]], ...]:
    kb = load_knowledge()
    return tuple((tuple(norm(m).strip() for m in g.members), frozenset(w for t in g.tags for w in norm(t).split())) for g in kb.activity_groups)


@lru_cache(maxsize=4)
def _normed_idioms(idioms: tuple[str, ...]) -> tuple[str, ...]:
    """The care-plan idioms as expand_activity_words replaces them, normalized once rather than on every memory."""
    return tuple(f" {norm(idiom).strip()} " for idiom in idioms)


def expand_activity_words(text: str, kb: Knowledge | None = None) -> set[str]:
    """Memory words plus the tags of activity groups and drug classes it names (running -> high impact)."""
    if kb is None or kb is load_knowledge():
        return set(_expanded_activity_words(text))  # the shared tables: kept per text
    return _expand_activity_words(text, kb)


@lru_cache(maxsize=16384)
def _expanded_activity_words(text: str) -> frozenset[str]:
    return frozenset(_expand_activity_words(text, load_knowledge()))


def _expand_activity_words(text: str, kb: Knowledge) -> set[str]:
    normed = norm(text)
    for idiom in _normed_idioms(kb.idioms):
        normed = normed.replace(idiom, " | ")
    words = set(normed.split())
    for members, tags in _activity_groups():
        hits = [m for m in members if has_phrase(normed, m)]
        if hits:
            words |= tags
            for m in hits:
                words |= set(m.split())
    mention = drugs_in_text(text, kb, fuzzy=False)
    for d in mention.drugs:
        words |= set(norm(d.name).split())
        for cid in kb.drug_classes(d):
            words |= set(norm(kb.classes[cid].label).split()) | {cid}
            if cid == "nsaid":
                words |= {"nsaids", "nsaid"}
    return words


def stems(words: set[str]) -> set[str]:
    return {_stem(w) for w in words}


@lru_cache(maxsize=65536)
def _stem(w: str) -> str:
    """A word without its first inflection suffix that leaves 3+ letters (kept per word: the rules stem the same
    memory and care-plan words many times)."""
    for suffix in ("ing", "es", "s", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w
