"""Clinical lexicon: drug-NER variants, ICD-10-CM lay terms, curated aliases and record displays as one n-gram index."""
from __future__ import annotations

import bz2
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import pickle
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from rapidfuzz.distance import DamerauLevenshtein

from . import vocabulary as vocabulary_module
from .vocabulary import CLASSES_PATH, DRUGS_PATH, load_vocabulary

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
ALIASES_PATH = DATA_DIR / "aliases.json"

# Tokens keep inner apostrophes and hyphens ("sister-in-law", "hector's"), nothing else.
TOKEN_RE = re.compile(r"[a-z0-9]+(?:['\-][a-z0-9]+)*")
MAX_NGRAM = 6
_DETERMINERS = frozenset("my the his her both our your their".split())
# Phrases whose plural means something else: "the pill" is contraception, "the pills" is any pills.
SINGULAR_ONLY = frozenset({"the pill"})

# Priority when two sources claim the same phrase: curated beats the record beats the packages.
PRIORITY = {"alias": 0, "record": 1, "drug_ner": 2, "icd10cm": 3}

# Ordinary English and chat words that happen to be drug-dictionary variants (brands, abbreviations,
# foreign names of metals) or ICD terms. A general list, not tuned to any transcript.
STOPWORDS = frozenset(
    """
    a an the and or but if so of to in on at by for from with without about as is are was were be been being am
    i me my mine we us our you your he him his she her they them their it its this that these those there here
    do does did done doing have has had having get got gets getting go goes went gone going make made take took
    taken taking give gave given use used using one two three four five six seven eight nine ten all any some
    no not never none nothing yes yeah ok okay lol lmao omg idk tbh btw fyi pls thx ty np imo ngl
    caps cap sits sit hops oats flours flour mops modus sone lats vals tris cloves aloe sulfur talen cobre eisen
    hierro kupfer titane cuivre pulsar tetris silverado colgate diamonds camila angelica rela agit caju cera ches
    copal boldo dona gana zyma teta xepi mentol snares yeasts orexin titin sulp ogen pecans lindan tensin
    fargo mirena lamins trim mars alli plan help may june april august march will can cant wont dont
    well good fine great better worse best bad sick pill pills shot shots pen pens med meds medicine
    cold fall falls fell hurt hurts sore tired fat thin dry wet hot warm
    more most less least much many very too also just only even still again back down up out off over under
    again then than when where what which who whom whose why how now new old same other another each every both
    few lot lots little big small long short high low right left next last first second early late soon later
    day days week weeks month months year years time times today tomorrow yesterday morning night evening
    home work house car food water milk juice coffee tea beer wine sugar salt bread rice meat fish chicken egg
    man woman men women kid kids baby boy girl friend family people person life world way thing things stuff
    know think feel felt say said tell told ask asked want wanted need needed like liked love try tried keep kept
    look looked see saw seen come came walk walked run ran eat ate drink drank sleep slept call called
    care help plus max pro prime ultra active relief rest ease calm clear free pure natural balance boost
    focus energy power control support total complete advance advanced basic simple regular extra strength
    attention breaks fingers needles taco worries death chest glucose sugar oxygen
    """.split()
)


@dataclass(frozen=True)
class Entry:
    """One lexicon sense of a phrase."""

    kind: str  # drug, drug_class, condition, symptom, procedure, immunization, care, allergen
    canonical: str
    source: str  # alias, record, drug_ner, icd10cm
    detail: str = ""  # provenance note (alias source text, ICD code, record resource)
    drug_class: str = ""
    is_brand: bool = False
    record_ref: tuple[str, str] | None = None  # (resourceType, id) when matched against the record
    display: str = ""
    code: str = ""


@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    tok_start: int
    tok_end: int
    term: str
    entries: tuple[Entry, ...]

    @property
    def best(self) -> Entry:
        return self.entries[0]


@dataclass
class Candidate:
    term: str
    suggestion: str
    kind: str
    score: float
    admitted: bool
    start: int = 0
    end: int = 0


def tokenize(lowered: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(lowered)]


def normalize_phrase(text: str) -> str:
    return " ".join(t for t, _, _ in tokenize(lower_same_length(text)))


def lower_same_length(text: str) -> str:
    """Lowercase without changing offsets (a few Unicode letters grow when lowered) and fold curly quotes."""
    if text.isascii():
        return text.lower().replace("`", "'")
    out = []
    for ch in text:
        low = ch.lower()
        if len(low) != 1:
            low = ch
        if low in "\u2019\u2018\u02bc`":
            low = "'"
        out.append(low)
    return "".join(out)


def damerau1(a: str, b: str) -> bool:
    """True when a and b differ by at most one insertion, deletion, substitution or adjacent transposition."""
    return DamerauLevenshtein.distance(a, b, score_cutoff=1) <= 1


# Everyday words one edit away from a brand ("program" / Prograf): never a misspelt drug.
NOT_MISSPELT = frozenset("program programs programme general regular natural pattern contrast lottery"
                         " battery restless separate".split())
_ENGLISH_SUFFIX = re.compile(r"(ing|ings|ed|ly|tion|tions|ness|ment|ments|able|ible|ful|ous|ers|est|ship|less|ward|wards|ity)$")


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


@dataclass
class Lexicon:
    phrases: dict[str, tuple[Entry, ...]] = field(default_factory=dict)
    drug_classes: dict[str, str] = field(default_factory=dict)
    fuzzy_index: dict[str, tuple[str, ...]] = field(default_factory=dict)  # delete-variant -> drug words
    alias_version: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    # ---- building ---------------------------------------------------------------------------

    def add(self, phrase: str, entry: Entry, *, normalized: bool = False) -> None:
        key = phrase if normalized else normalize_phrase(phrase)
        if not key or key.count(" ") >= MAX_NGRAM:
            return
        existing = self.phrases.get(key)
        if existing is None:
            self.phrases[key] = (entry,)
            return
        if any(e.kind == entry.kind and e.canonical == entry.canonical for e in existing):
            return
        self.phrases[key] = tuple(sorted((*existing, entry), key=lambda e: PRIORITY.get(e.source, 9)))

    def class_of(self, drug: str) -> str:
        return self.drug_classes.get(drug, "")

    # ---- matching ---------------------------------------------------------------------------

    def match(self, lowered: str, tokens: list[tuple[str, int, int]] | None = None,
              overlay: dict[str, tuple[Entry, ...]] | None = None) -> list[Hit]:
        """Longest-match-first scan over token n-grams; overlay entries (the record's) take priority."""
        tokens = tokens if tokens is not None else tokenize(lowered)
        words = [t for t, _, _ in tokens]
        hits: list[Hit] = []
        starts = self._start_index()
        over = _overlay_starts(overlay)
        i, n = 0, len(words)
        while i < n:
            found = None
            word = words[i]
            purpose = self._purpose_at(words, i) if word in _PURPOSE_FORMS else None
            if purpose is not None:
                size, entries = purpose
                hits.append(Hit(tokens[i][1], tokens[i + size - 1][2], i, i + size,
                                lowered[tokens[i][1] : tokens[i + size - 1][2]], entries))
                i += size
                continue
            longest = max(starts.get(word, 0), over.get(word, 0))
            if longest == 0 and not (len(word) > 4 and word.endswith("s")):
                i += 1  # no phrase starts with this word: most words of a sentence stop here
                continue
            for size in range(min(max(longest, 1), n - i), 0, -1):
                key = " ".join(words[i : i + size])
                if key in SINGULAR_ONLY and i + size + 1 < n and words[i + size] == "for" \
                        and self._purpose_at(words, i + size - 1) is not None:
                    continue  # "the pill for my sugar" is a diabetes pill, not the contraceptive Pill
                entries = self._lookup(key, overlay)
                if entries is None and size == 1:
                    entries = self._lookup_variants(words[i], overlay)
                elif entries is None and words[i + size - 1].endswith("s") and len(words[i + size - 1]) > 4 \
                        and key[:-1] not in SINGULAR_ONLY:
                    entries = self._lookup(key[:-1], overlay)  # "yeast infections", "flu shots"
                if entries:
                    found = (size, entries)
                    break
            if found:
                size, entries = found
                start, end = tokens[i][1], tokens[i + size - 1][2]
                hits.append(Hit(start, end, i, i + size, lowered[start:end], entries))
                i += size
            else:
                i += 1
        return hits

    def match_inverted(self, lowered: str, tokens: list[tuple[str, int, int]], hits: list[Hit]) -> list[Hit]:
        """English puts a body site after its symptom as well as before it: "pressure in my chest" names the
        lexicon's "chest pressure". A head noun, "in", a determiner and a site form one symptom or condition."""
        taken = {i for h in hits for i in range(h.tok_start, h.tok_end)}
        out: list[Hit] = []
        for i in range(len(tokens) - 3):
            head, prep, det, site = (t[0] for t in tokens[i : i + 4])
            if prep != "in" or det not in _DETERMINERS or taken & set(range(i, i + 4)):
                continue
            for key in (f"{site} {head}", f"{site.rstrip('s')} {head}"):
                entries = tuple(e for e in self.phrases.get(key, ()) if e.kind in ("symptom", "condition"))
                if entries:
                    start, end = tokens[i][1], tokens[i + 3][2]
                    out.append(Hit(start, end, i, i + 4, lowered[start:end], entries))
                    taken |= set(range(i, i + 4))
                    break
        return out

    def _purpose_at(self, words: list[str], i: int) -> tuple[int, tuple[Entry, ...]] | None:
        """A medicine named by its purpose after the form word: "the pill for my bones" is the lexicon's "bone pill",
        "meds for the blood pressure" its "blood pressure meds" (English paraphrases a noun compound "X N" as "N for X";
        Levi 1978, Nakov & Hearst 2013). Only drug-class phrases the dictionary already holds are named this way:
        (tokens spanned, entries), or None."""
        if words[i] not in _PURPOSE_FORMS or i + 2 >= len(words) or words[i + 1] != "for":
            return None
        j = i + 3 if words[i + 2] in _DETERMINERS else i + 2
        for size in (2, 1):
            if j + size > len(words):
                continue
            purpose = " ".join(words[j : j + size])
            for key in dict.fromkeys((f"{purpose} {words[i]}", f"{purpose.removesuffix('s')} {words[i]}")):
                entries = tuple(e for e in self.phrases.get(key, ()) if e.kind == "drug_class")
                if entries:
                    return j + size - i, entries
        return None

    def _start_index(self) -> dict[str, int]:
        """First word -> the longest phrase starting with it (plural forms included), built once."""
        index = self.__dict__.get("_starts")
        if index is None:
            index = {}
            for key in self.phrases:
                parts = key.split(" ")
                for first in (parts[0], parts[0] + "s"):
                    if len(parts) > index.get(first, 0):
                        index[first] = len(parts)
                if len(parts) > 1:  # "yeast infections": the plural sits on the last word
                    index[parts[0]] = max(index.get(parts[0], 0), len(parts))
            self.__dict__["_starts"] = index
        return index

    def _lookup(self, key: str, overlay: dict[str, tuple[Entry, ...]] | None) -> tuple[Entry, ...] | None:
        if overlay and key in overlay:
            return overlay[key] + self.phrases.get(key, ())
        return self.phrases.get(key)

    def _lookup_variants(self, word: str, overlay: dict[str, tuple[Entry, ...]] | None) -> tuple[Entry, ...] | None:
        """Possessive and plural forms: "hector's" is not a drug, "norcos" is."""
        if word.endswith("'s"):
            # "heartburn's gone", "my asthma's acting up": the clitic is "is"/"has" on a symptom or condition; a
            # possessive on a drug-like word ("hector's") is a person, never a drug
            found = self._lookup(word[:-2], overlay)
            kept = tuple(e for e in found or () if e.kind in ("symptom", "condition"))
            return kept or None
        if len(word) > 4 and word.endswith("s") and word not in STOPWORDS:
            return self._lookup(word[:-1], overlay)
        return None

    def near_misses(self, tokens: list[tuple[str, int, int]], matched: set[int]) -> list[Candidate]:
        """Unmatched words one edit away from a drug-dictionary word (SymSpell-style delete index)."""
        out: list[Candidate] = []
        for idx, (word, start, end) in enumerate(tokens):
            if idx in matched or len(word) < 6 or not word.isalpha() or word in STOPWORDS or word in NOT_MISSPELT \
                    or _ENGLISH_SUFFIX.search(word):
                continue  # "recovering" is not a misspelt "recoverin": drug names rarely carry English inflections
            suggestions: set[str] = set()
            for probe in {word} | _deletes(word):
                for target in self.fuzzy_index.get(probe, ()):
                    if target != word and damerau1(word, target):
                        suggestions.add(target)
            if len(word) < 7:
                # a six-letter word is admitted only as a curated seven-letter name (drugs.json: the names patients
                # use) with one letter dropped and the first kept ("lithum", "eliqus"); substitutions at that length,
                # and the package's rare names ("miltown"), are too often English words or people's names
                suggestions = {t for t in suggestions if len(t) == len(word) + 1 and t[0] == word[0]
                               and any(e.kind == "drug" and e.source == "alias" for e in self.phrases.get(t, ()))}
            if not suggestions:
                continue
            canon = sorted({e.canonical for s in suggestions for e in self.phrases.get(s, ()) if e.kind == "drug"})
            admitted = len(canon) == 1
            best = sorted(suggestions)[0]
            out.append(Candidate(word, canon[0] if len(canon) == 1 else best, "drug", 0.8, admitted, start, end))
        return out


_OVERLAY_STARTS: dict[int, tuple[dict, dict[str, int]]] = {}


def _overlay_starts(overlay: dict[str, tuple[Entry, ...]] | None) -> dict[str, int]:
    if not overlay:
        return {}
    cached = _OVERLAY_STARTS.get(id(overlay))
    if cached is not None and cached[0] is overlay:
        return cached[1]
    index: dict[str, int] = {}
    for key in overlay:
        parts = key.split(" ")
        for first in (parts[0], parts[0] + "s"):
            index[first] = max(index.get(first, 0), len(parts))
    _OVERLAY_STARTS.clear()  # one patient's record at a time
    _OVERLAY_STARTS[id(overlay)] = (overlay, index)
    return index


# ---- sources ----------------------------------------------------------------------------------


def _load_vocabulary(lex: Lexicon) -> None:
    """Drug classes, then drugs, from the shared vocabulary: class names first so a lay family keeps its sense."""
    vocab = load_vocabulary()
    for cls in vocab.classes.values():
        for term, source in cls.terms.items():
            lex.add(term, Entry("drug_class", cls.label, "alias", vocab.source_of(source), drug_class=cls.label))
    for drug in vocab.drugs.values():
        reported = vocab.reported_class(drug)
        label = reported.label if reported else ""
        if label:
            lex.drug_classes[drug.id] = label
        for term, source in drug.terms.items():
            lex.add(term, Entry("drug", drug.id, "alias", vocab.source_of(source), drug_class=label))
    lex.stats["vocabulary"] = sum(len(c.terms) for c in vocab.classes.values()) + sum(len(d.terms) for d in vocab.drugs.values())


def _load_aliases(lex: Lexicon) -> None:
    data = json.loads(ALIASES_PATH.read_text(encoding="utf-8"))
    lex.alias_version = str(data.get("version", ""))
    for item in data.get("entries", []):
        kind, canonical = item["kind"], item["canonical"]
        cls = item.get("drug_class", "") or (canonical if kind == "drug_class" else lex.drug_classes.get(canonical, ""))
        lex.add(item["term"], Entry(kind, canonical, "alias", item.get("source", ""), drug_class=cls))
    lex.stats["aliases"] = len(data.get("entries", []))


def _drug_ner_path() -> Path | None:
    # Found, not imported: importing the package builds its own n-gram index from this file (a third of a cold build).
    spec = importlib.util.find_spec("drug_named_entity_recognition")
    if spec is None or not spec.submodule_search_locations:  # a declared dependency; degrade to aliases if absent
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "drug_ner_dictionary.pkl.bz2"
    return path if path.exists() else None


def _read_drug_ner() -> bytes | None:
    """The package's dictionary, decompressed (bz2 releases the GIL: build_lexicon reads it beside the ICD parse)."""
    path = _drug_ner_path()
    if path is None:
        return None
    with bz2.open(path, "rb") as fh:
        return fh.read()


def _load_drug_ner(lex: Lexicon, raw: bytes | None) -> None:
    if raw is None:
        lex.stats["drug_ner_variants"] = 0
        return
    data = pickle.loads(raw)  # the package's own shipped file, read the way the package reads it
    variants: dict[str, list[str]] = data.get("drug_variant_to_canonical", {})
    variant_data: dict[str, dict] = data.get("drug_variant_to_variant_data", {})
    vocab = load_vocabulary()
    # A key below is already in the vocabulary's lookup form (lowercase tokens, single spaces), so drug_named(key)
    # finds a drug only for one of these names: the other 100k variants skip the lookup. Canonicals repeat: memoised.
    names = {vocabulary_module.key(n) for d in vocab.drugs.values() for n in (d.id, *d.terms)}
    by_canonical: dict[str, Any] = {}
    fuzzy: dict[str, list[str]] = {}
    shared: dict[tuple[str, bool], Entry] = {}
    count = 0
    for variant, canonicals in variants.items():
        if not canonicals:
            continue
        key = " ".join(TOKEN_RE.findall(variant.lower())) if variant.isascii() else normalize_phrase(variant)
        if not key or key in STOPWORDS or (len(key) <= 3 and " " not in key):
            continue
        # a package name that the vocabulary knows ("Basaglar", "insulin glargine (rdna origin)") is that drug
        known = vocab.drug_named(key) if key in names else None
        if known is None:
            first = str(canonicals[0])
            if first not in by_canonical:
                by_canonical[first] = vocab.drug_named(first)
            known = by_canonical[first]
        canonical = known.id if known is not None else str(canonicals[0]).lower()
        brand = bool(variant_data.get(variant, {}).get("is_brand"))
        entry = shared.get((canonical, brand))
        if entry is None:  # one Entry per drug and brand flag keeps 100k variants small
            entry = shared[(canonical, brand)] = Entry("drug", canonical, "drug_ner", "drug-named-entity-recognition",
                                                       drug_class=lex.drug_classes.get(canonical, ""), is_brand=brand)
        lex.add(key, entry, normalized=True)
        count += 1
        if key.isalpha() and len(key) >= 7:
            for d in _deletes(key) | {key}:
                fuzzy.setdefault(d, []).append(key)
    lex.fuzzy_index = {k: tuple(v) for k, v in fuzzy.items()}
    lex.stats["drug_ner_variants"] = count


_ICD_DROP = re.compile(
    r"\b(other|unspecified|specified|nec|nos|due to|with|without|classified|sequela|encounter|subsequent|initial|"
    r"newborn|fetus|maternal|pregnancy|puerperium|childbirth|poisoning|underdosing|adverse|exposure|struck|"
    r"accident|assault|history|personal|family|status|presence|screening|examination|contact)\b"
)
_ICD_CLEAN = [
    (re.compile(r"\[[^\]]*\]|\([^)]*\)"), " "),
    (re.compile(r",\s*(unspecified|site not specified|not elsewhere classified).*$"), ""),
    (re.compile(r"\bnos\b"), ""),
    (re.compile(r"^unspecified\s+"), ""),
]


# A single ICD word is admitted only when it looks like a disease or symptom name; anatomy and
# ordinary words left over from the cleaning ("chest", "death", "joints") are not conditions.
_ICD_SINGLE = re.compile(
    r"(itis|osis|oses|emia|aemia|oma|omas|iasis|pathy|algia|plegia|ism|rrhea|rrhoea|uria|cele|trophy|megaly|ectasis|"
    r"penia|spasm|ache|pox|ia|asthma|gout|fever|scabies|measles|mumps|rabies|shingles|thrush|ulcer|glaucoma|cataract|"
    r"migraine|epilepsy|vertigo|cough|syncope|edema|oedema|jaundice|acne|eczema|dyspnea|nausea|hiccough|"
    r"constipation|diarrhea|heartburn|palpitations|headache|tiredness|fatigue|malaise|wheezing|stroke|obesity|"
    r"hernia|seizure|seizures|convulsions|tremor|insomnia|snoring|dizziness|giddiness|hemorrhage|haemorrhage)$"
)


def _icd_terms(text: str) -> list[str]:
    term = text.lower()
    for rx, rep in _ICD_CLEAN:
        term = rx.sub(rep, term)
    term = re.sub(r"\s+", " ", term).strip(" ,")
    if not term or "," in term or _ICD_DROP.search(term):
        return []
    parts = [term]
    if " and " in term and len(term.split()) <= 5:  # "dizziness and giddiness" -> both halves
        parts += [p.strip() for p in term.split(" and ")]
    return [p for p in parts if 1 <= len(p.split()) <= 4 and len(p) >= 4 and (" " in p or (len(p) >= 5 and _ICD_SINGLE.search(p)))]


# A code's lay texts: its description and inclusion terms, plus a category's "includes" notes.
IcdTexts = list[tuple[str, list[str]]]


def _icd_skipped(code: str) -> bool:
    """Injuries, external causes, encounters, obstetric and perinatal codes are not lay conditions."""
    return code[0] in "STVWXYZOPU"


def _icd_texts() -> IcdTexts | None:
    """Every category and subcategory with its texts, in the package's code order; None without the package."""
    return _icd_texts_from_data() or _icd_texts_from_package()


def _icd_texts_from_package() -> IcdTexts | None:
    """Through the package's API. Its import parses the whole tabular list into objects (half a cold build): the
    fallback when its data files are not where _icd_texts_from_data expects them."""
    try:
        import simple_icd_10_cm as icd
    except ImportError:
        return None
    out: IcdTexts = []
    for code in icd.get_all_codes(with_dots=True):
        if not icd.is_category_or_subcategory(code) or _icd_skipped(code):
            continue
        texts = [icd.get_description(code), *icd.get_inclusion_term(code)]
        if icd.is_category(code):
            texts += list(icd.get_includes(code))
        out.append((code, texts))
    return out


@dataclass
class _IcdNode:
    name: str
    type: str
    description: str
    inclusion_terms: list[str]
    includes: list[str]


def _icd_texts_from_data() -> IcdTexts | None:
    """The same list read straight from the package's data files (its tabular XML and its list of valid codes),
    following the package's own tree rules (simple_icd_10_cm 1.5: _CodeTree and _load_codes) for the few fields the
    lexicon reads; tests/terminology/test_lexicon_build.py holds it equal to _icd_texts_from_package."""
    spec = importlib.util.find_spec("simple_icd_10_cm")
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    tabular, code_list = sorted(data.glob("icd10c-tabular-*.xml")), sorted(data.glob("code-list-*.txt"))
    if len(tabular) != 1 or len(code_list) != 1:  # another release lays out its data differently: use the API
        return None
    from xml.etree import ElementTree  # noqa: S405 - the installed package's own data file, as the package reads it

    confirmed = {line.split(" ")[0].replace(".", "") for line in code_list[0].read_text(encoding="utf-8").split("\n")}
    root = ElementTree.fromstring(tabular[0].read_text(encoding="utf-8"))  # noqa: S314
    nodes: list[_IcdNode] = []  # in the package's code order (depth first)

    def visit(element: Any, seven_ancestor: dict[str, str] | None) -> None:
        node = _IcdNode(element.attrib.get("id", ""), "", "", [], [])
        nodes.append(node)  # before its children, as get_all_codes lists them
        seven: dict[str, str] = {}
        child_seven, children = seven_ancestor, 0
        for sub in element:
            tag = sub.tag
            if tag in ("section", "diag"):
                visit(sub, child_seven)
                children += 1
            elif tag == "name":
                if sub.text is None:
                    raise ValueError("ICD-10-CM code without a name")
                node.name = sub.text
            elif tag == "desc" and sub.text is not None:
                node.description = sub.text
            elif tag == "inclusionTerm":
                node.inclusion_terms += [n.text for n in sub if n.text is not None]
            elif tag == "includes":
                node.includes += [n.text for n in sub if n.text is not None]
            elif tag == "sevenChrDef":
                last = None
                for ext in sub:
                    if ext.tag == "extension":
                        last = ext.attrib["char"]
                        seven[last] = ext.text if ext.text is not None else ""
                    elif ext.tag == "note" and last is not None and ext.text is not None:
                        seven[last] += "/" + ext.text
                child_seven = seven
        tag = element.tag
        node.type = {"chapter": "chapter", "section": "section"}.get(tag) or (
            "category" if len(node.name) == 3 else "subcategory")
        # A name used twice (a section named like its code, B99) means the node registered first: children
        # register before their parent, the seventh-character codes after it, as in the package.
        registered.setdefault(node.name, node)
        # A leaf under a seventh-character definition gets the codes made by adding each seventh character the
        # list of valid codes confirms; their description is the leaf's plus the character's meaning.
        table = seven or seven_ancestor
        if children == 0 and (seven or seven_ancestor is not None) and table:
            stem = node.name + "." if len(node.name) == 3 else node.name
            stem = stem.ljust(7, "X")
            for char, meaning in table.items():
                if stem[:3] + stem[4:] + char in confirmed:
                    extended = _IcdNode(stem + char, "extended subcategory", f"{node.description}, {meaning}", [], [])
                    nodes.append(extended)
                    registered.setdefault(extended.name, extended)

    registered: dict[str, _IcdNode] = {}
    for chapter in list(root)[2:]:  # after <version> and <introduction>
        visit(chapter, None)

    def lookup(code: str) -> _IcdNode:
        if len(code) >= 4 and code[3] != "." and code[:3] + "." + code[3:] in registered:
            code = code[:3] + "." + code[3:]
        return registered[code]

    out: IcdTexts = []
    for name in (n.name for n in nodes):
        node = lookup(name)
        if node.type not in ("category", "subcategory", "extended subcategory") or _icd_skipped(name):
            continue
        texts = [node.description, *node.inclusion_terms]
        if node.type == "category":
            texts += node.includes
        out.append((name, texts))
    return out


def _load_icd(lex: Lexicon, rows: IcdTexts | None) -> None:
    if rows is None:
        lex.stats["icd_terms"] = 0
        return
    count = 0
    for code, texts in rows:
        kind = "symptom" if code.startswith("R") else "condition"
        for text in texts:
            for term in _icd_terms(text):
                if term in STOPWORDS:
                    continue
                lex.add(term, Entry(kind, term, "icd10cm", code))
                count += 1
    lex.stats["icd_terms"] = count


_lock = threading.Lock()


BUILD_VERSION = "2"  # bump when the build logic changes so cached indexes are rebuilt


def _cache_path() -> Path | None:
    """A derived-index cache keyed by the alias file, the package versions and the build logic (this module's source)."""
    root = os.environ.get("RECONCILE_LEXICON_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "reconcile")
    digest = hashlib.sha256(ALIASES_PATH.read_bytes())
    for path in (DRUGS_PATH, CLASSES_PATH, Path(vocabulary_module.__file__)):
        digest.update(path.read_bytes())
    for dist in ("drug-named-entity-recognition", "simple_icd_10_cm"):
        try:
            digest.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{dist}=absent".encode())
    digest.update(BUILD_VERSION.encode())
    try:  # any change to the build code or the pickled classes makes a new key, so a stale index is never loaded
        digest.update(Path(__file__).read_bytes())
    except OSError:
        pass
    return Path(root) / f"lexicon-{digest.hexdigest()[:16]}.pkl"


def _load_cached(path: Path) -> Lexicon | None:
    """The cached index, or None when it is missing, truncated, foreign or empty (the caller rebuilds)."""
    try:
        with path.open("rb") as fh:
            lex = pickle.load(fh)  # our own file, written by _store_cached from the packages' data
    except FileNotFoundError:
        return None
    except Exception:  # truncated, corrupt or written by an incompatible build: rebuild, never fatal
        logger.warning("lexicon cache unreadable; rebuilding")
        return None
    if not isinstance(lex, Lexicon) or not isinstance(getattr(lex, "phrases", None), dict) or not lex.phrases:
        logger.warning("lexicon cache has unexpected content; rebuilding")
        return None
    return lex


def _store_cached(lex: Lexicon, path: Path) -> None:
    """Write to a unique temporary file in the same folder, then rename: readers see the old file or the whole new
    one, never a partial one, and concurrent cold starts (workers, CI jobs sharing the folder) cannot collide."""
    tmp_name = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=path.stem + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(lex, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
        tmp_name = ""
        week_ago = time.time() - 7 * 86400
        for old in path.parent.glob("lexicon-*"):  # week-old indexes of other versions and orphaned temp files
            with contextlib.suppress(OSError):
                if old != path and old.stat().st_mtime < week_ago:
                    old.unlink()
    except (OSError, pickle.PicklingError):
        logger.warning("lexicon cache not writable")
    finally:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def build_lexicon() -> Lexicon:
    started = time.perf_counter()
    lex = Lexicon()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lexicon-drug-ner") as pool:
        drug_ner = pool.submit(_read_drug_ner)  # decompressed while the ICD tabular list is parsed
        icd = _icd_texts()
        _load_vocabulary(lex)
        _load_aliases(lex)
        _load_drug_ner(lex, drug_ner.result())
    _load_icd(lex, icd)
    lex.stats["phrases"] = len(lex.phrases)
    lex.stats["build_seconds"] = round(time.perf_counter() - started, 2)
    return lex


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """Built once per process; the derived index is cached on disk so later processes load it in under a second."""
    with _lock:
        started = time.perf_counter()
        try:
            path = _cache_path()
        except OSError:  # the alias file itself unreadable: build without a cache (the build reports it)
            path = None
        if path is not None:
            lex = _load_cached(path)
            if lex is not None:
                lex.stats["load_seconds"] = round(time.perf_counter() - started, 2)
                return lex
        lex = build_lexicon()
        # The first-word index is stored with the phrases: every process that loads the cache would otherwise build
        # it again on its first match (0.17 CPU-s; loading it with the rest costs next to nothing).
        lex._start_index()
        if path is not None:
            _store_cached(lex, path)
        logger.info("lexicon built: %s", lex.stats)
        return lex


# ---- the patient's own record ------------------------------------------------------------------

_RECORD_KIND = {
    "MedicationRequest": "drug",
    "MedicationStatement": "drug",
    "Condition": "condition",
    "AllergyIntolerance": "allergen",
    "Procedure": "procedure",
    "Immunization": "immunization",
    "CarePlan": "care",
}
_DOSE_TAIL = re.compile(r"\b\d[\d.,]*\s*(mg|mcg|g|ml|unit|units|%|meq|iu)\b.*$", re.I)
_FORM_WORDS = re.compile(r"\b(oral|tablet|tablets|capsule|capsules|injection|solution|pen|injector|extended|release|"
                         r"delayed|inhalation|inhaler|powder|suspension|topical|cream|hr|er|xr|sr|dr|od|actuat|metered|dose|"
                         r"disease|disorder|mellitus|type|primary|essential)\b.*$", re.I)


def record_overlay(record: Any, lex: Lexicon) -> dict[str, tuple[Entry, ...]]:
    """Phrases from the patient's own record displays, linked back to the resources (rxnorm hint, display)."""
    overlay: dict[str, list[Entry]] = {}
    if record is None:
        return {}
    try:
        entries = list(record.visible())
    except Exception:  # a malformed record must not stop extraction
        return {}
    for entry in entries:
        kind = _RECORD_KIND.get(getattr(entry, "resource_type", ""))
        display = str(getattr(entry, "display", "") or "")
        if not kind or not display:
            continue
        coding = entry.primary_coding
        code = coding.code if coding else ""
        names = _record_names(display, kind, lex)
        if kind == "care":
            # the plan's activities ("Daily weights; Low sodium diet") are what patients talk about
            for part in re.split(r"[;,.]", str(getattr(entry, "detail", "") or "")):
                phrase = normalize_phrase(re.sub(r"\([^)]*\)", " ", part))
                if phrase and 1 <= len(phrase.split()) <= 4 and phrase not in STOPWORDS:
                    names.append((phrase, phrase))
        for name, canonical in names:
            e = Entry(kind, canonical, "record", f"{entry.resource_type}/{entry.id}",
                      drug_class=lex.class_of(canonical) if kind == "drug" else "",
                      record_ref=(entry.resource_type, entry.id), display=display, code=code)
            key = normalize_phrase(name)
            if key and key not in STOPWORDS and (len(key) > 3 or " " in key):
                bucket = overlay.setdefault(key, [])
                if not any(b.record_ref == e.record_ref for b in bucket):
                    bucket.append(e)
    return {k: tuple(v) for k, v in overlay.items()}


_RX_PREFIX = re.compile(r"^(?:NDA\d+\s+)?(?:\d+(?:\.\d+)?\s*(?:HR|ML|MG|UNT|ACTUAT|MCG|DAY)\s+)*", re.I)
_SEMANTIC_TAG = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_LEADING_QUALIFIER = re.compile(r"^(?:essential|primary|benign|unspecified|history of|allergy to|allergy|intolerance to)\s+", re.I)


def _record_names(display: str, kind: str, lex: Lexicon) -> list[tuple[str, str]]:
    """The display without its SNOMED tag, plus its head term ("Lisinopril 10 MG Oral Tablet" -> "lisinopril")."""
    clean = _SEMANTIC_TAG.sub(" ", display)
    full = normalize_phrase(clean)
    out: list[tuple[str, str]] = []
    if kind == "drug":
        # RxNorm names: "24 HR metformin hydrochloride 500 MG Extended Release Oral Tablet", "3 ML liraglutide 6 MG/ML Pen"
        stripped = _RX_PREFIX.sub("", clean.strip())
        no_dose = _DOSE_TAIL.sub("", stripped)
        first, _, rest = no_dose.strip().partition(" ")
        head = normalize_phrase(first + " " + _FORM_WORDS.sub("", rest))
        # The canonical drug comes from the dictionary when the head (or its first word) is a known variant.
        first_word = head.split()[0] if head else ""
        canonical, candidate = _record_drug_canonical(head, first_word, lex)
        if canonical and candidate != head:
            out.append((candidate, canonical))
        canonical = canonical or head
        if head:
            out.append((head, canonical))
        if full and full != head and len(full.split()) <= MAX_NGRAM:
            out.append((full, canonical))
        if "/" in stripped:  # combination products: "Amoxicillin 250 MG / Clavulanate 125 MG"
            for part in re.split(r"\s*/\s*", stripped):
                word = normalize_phrase(_DOSE_TAIL.sub("", part)).split(" ")[0]
                if word and word != head and any(e.kind == "drug" for e in lex.phrases.get(word, ())):
                    out.append((word, canonical))
        return out
    short = normalize_phrase(_LEADING_QUALIFIER.sub("", clean.strip()))
    canonical = short or full
    for name in dict.fromkeys([full, short]):
        if name and len(name.split()) <= MAX_NGRAM:
            out.append((name, canonical))
    return out


# the form words a medicine is named by before its purpose ("pill for my bones")
_PURPOSE_FORMS = frozenset({"pill", "pills", "medicine", "medicines", "med", "meds", "medication", "medications",
                            "tablet", "tablets", "shot", "shots"})


def _record_drug_canonical(head: str, first_word: str, lex: Lexicon) -> tuple[str, str]:
    """The dictionary's drug for a record's head term, and the phrase that named it. A curated name (drugs.json:
    "alendronic acid" is alendronate, "carbidopa" the carbidopa/levodopa product) wins at any of the head, its first two
    words or its first word; a package variant only when it keeps the first word ("levothyroxine sodium" is levothyroxine,
    not the package's "thyroxine"): RxNorm writes the salt or acid form, patients and the tables the generic."""
    candidates = list(dict.fromkeys((head, " ".join(head.split()[:2]), first_word)))
    for curated in (True, False):
        for candidate in candidates:
            for e in lex.phrases.get(candidate, ()):
                if e.kind != "drug" or (e.source == "alias") != curated:
                    continue
                if curated or e.canonical.split()[0] == first_word:
                    return e.canonical, candidate
    return "", ""


def iter_hits_of_kind(hits: Iterable[Hit], *kinds: str) -> list[Hit]:
    return [h for h in hits if h.best.kind in kinds]


@lru_cache(maxsize=16384)
def drugs_named_in(text: str) -> frozenset[str]:
    """Every drug a text names under any name the terminology knows (vocabulary or drug dictionary), as canonical ids.
    Exact names only: a near-miss spelling is a candidate for the extractor, not evidence for the reconciler."""
    lex = default_lexicon()
    low = lower_same_length(text or "")
    hits = [h for h in lex.match(low, tokenize(low)) if not all(w in STOPWORDS for w in h.term.split())]  # "all clear"
    return frozenset(e.canonical for h in hits for e in h.entries if e.kind == "drug")
