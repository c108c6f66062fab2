"""Curated clinical knowledge (data/*.json, each row sourced) over the shared terminology's names, loaded once and indexed."""
from __future__ import annotations

import ast
import json
import re
from re import _constants as _sre, _parser as _sre_parser  # the regex parse tree, for _needed_words
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from reconcile_app.terminology.concepts import condition_codes
from reconcile_app.terminology.vocabulary import Drug, Vocabulary, load_vocabulary

DATA_DIR = Path(__file__).with_name("data")

_NON_WORD = re.compile(r"[^a-z0-9%+.]+")


# The rules normalise the same few texts (a quote, the session, a care plan's text) hundreds of times per session:
# both forms are pure functions of the text, kept for the texts seen last.
@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """Lowercase, fold apostrophes away, keep words/digits; padded with spaces for phrase search."""
    text = (text or "").lower().replace("\u2019", "'").replace("'", "")
    text = text.replace("/", " ").replace("-", " ")
    text = _NON_WORD.sub(" ", text)
    text = re.sub(r"(?<![0-9])\.|\.(?![0-9])", " ", text)
    return " " + " ".join(text.split()) + " "


@lru_cache(maxsize=65536)
def regex_text(text: str) -> str:
    """The text the regex tables run on: lowercased, curly quotes folded, whitespace collapsed."""
    return " ".join((text or "").lower().replace("\u2019", "'").split())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences at a full stop, question or exclamation mark followed by space (chat rarely capitalises the next)."""
    return _SENTENCE_END.split(text)


def has_phrase(normed: str, term: str) -> bool:
    return f" {term} " in normed if term else False


@dataclass(frozen=True)
class DrugClass:
    id: str
    label: str
    lay: tuple[str, ...]
    parents: tuple[str, ...]
    indications: tuple[str, ...]
    stop: tuple[str, bool]
    change: tuple[str, bool]
    new: tuple[str, bool]
    high_risk: bool
    source: str
    procedures: tuple[str, ...] = ()  # record procedures that make the drug critical (a stent for an antiplatelet)
    devices: tuple[str, ...] = ()  # delivery devices ("pump"): taking one off stops the drug, when the record's order names it
    forms: tuple[str, ...] = ()  # dosage-form words ("inhaler", "disk", "pen") that ground an extractor's class in the quote
    periprocedural: bool = False  # a procedure in a patient on it needs a hold/bridge plan: outside procedures cite it
    cross_reactive: bool = False  # an allergy to one member is an allergy warning for the others (sourced per row)


@dataclass(frozen=True)
class Concept:
    """A condition concept: lay and SNOMED display words that name it."""

    id: str
    terms: tuple[str, ...]
    loinc: tuple[str, ...]
    related: tuple[str, ...]
    source: str
    purpose: tuple[str, ...] = ()  # what a patient says a remedy is "for" ("for my sugar")
    diagnosis: tuple[str, bool] = ("medium", False)  # severity and safety of a new outside diagnosis


@dataclass(frozen=True)
class Vaccine:
    id: str
    terms: tuple[str, ...]
    cvx: tuple[str, ...]
    live: bool
    source: str
    indications: tuple[str, ...] = ()  # conditions that make it recommended (for what a reviewer looks at)


@dataclass(frozen=True)
class RangeRule:
    id: str
    when: str
    severity: str
    safety: bool
    text: str
    source: str


@dataclass(frozen=True)
class Measure:
    kind: str
    loinc: tuple[str, ...]
    terms: tuple[str, ...]
    conditions: tuple[str, ...]
    careplan_terms: tuple[str, ...]
    rules: tuple[RangeRule, ...]


@dataclass(frozen=True)
class Interaction:
    a: str
    b: str
    severity: str
    safety: bool
    why: str
    source: str
    loinc: tuple[str, ...] = ()  # the lab to look at beside it


@dataclass(frozen=True)
class RedFlag:
    id: str
    patterns: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    severity: str
    safety: bool
    label: str
    conditions: tuple[str, ...]
    classes: tuple[str, ...]
    loinc: tuple[str, ...]
    explained_by: tuple[str, ...]
    requires_conditions: tuple[str, ...]
    careplan: bool
    source: str
    requires_classes: tuple[str, ...] = ()  # only with an active drug of these classes (a side effect)
    unexplained: tuple[re.Pattern[str], ...] = ()  # words beyond what an explained_by cause explains (red, tarry stools)
    dangerous_with: tuple[str, ...] = ()  # drug classes that make the sign worth a look whatever explains it

    @cached_property
    def _any_pattern(self) -> re.Pattern[str] | None:
        """The patterns as one alternation: a text none of them hits (most texts, for most of the hundred rows) is
        turned away by one search instead of a scan per exclusion and pattern. None when the patterns cannot be
        joined without changing what they mean (back-references, conditional groups, inline flags, named groups)."""
        sources = [p.pattern for p in self.patterns]
        if not sources or any(_UNJOINABLE.search(s) for s in sources) or len({p.flags for p in self.patterns}) != 1:
            return None
        try:
            return re.compile("|".join(f"(?:{s})" for s in sources), self.patterns[0].flags)
        except re.error:
            return None

    def hits(self, text: str) -> list[re.Match[str]]:
        """Every place the text says the row's words, pattern by pattern, denied or not (the rules weigh each place)."""
        return [hit for p in self.patterns for hit in p.finditer(text)]

    def matches(self, text: str) -> bool:
        """A pattern hit that is not negated just before it ("no chest pain", "without any dizziness")."""
        joined = self._any_pattern
        if joined is not None and joined.search(text) is None:
            return False  # no pattern hits anywhere: the scan below could only end False too
        if any(not _NEGATED_BEFORE.search(text[max(0, hit.start() - 40):hit.start()])
               for p in self.exclude for hit in p.finditer(text)):
            return False  # an exclusion only counts when it is said, not denied ("no rash, nothing itchy")
        for pattern in self.patterns:
            for hit in pattern.finditer(text):
                if _NEGATED_BEFORE.search(text[max(0, hit.start() - 40):hit.start()]):
                    continue
                if _OTHER_SUBJECT_BEFORE.search(text[max(0, hit.start() - 30):hit.start()]):
                    continue  # "my husband fell", "she passed out": someone else's event
                if _DENIED_AFTER.search(text[hit.end():hit.end() + 80]):
                    continue  # "those dizzy spells? no, not since the surgery"
                return True
        return False


def _needed_words(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """Literal strings one of which every match of the pattern contains (read from its parse tree: a run of literal
    characters the match must pass through, or one such run per alternative of a group it must pass through), or None
    when no such set can be read (case-insensitive patterns, a pattern whose every part is optional or a class)."""
    try:
        if pattern.flags & re.IGNORECASE:
            return None
        return _needed_in(_sre_parser.parse(pattern.pattern, pattern.flags).data)
    except Exception:  # an unexpected parse tree: no screen for this pattern (it is always asked)
        return None


def _needed_in(items: list[Any]) -> frozenset[str] | None:
    """The most selective needed set of a sequence of parse items: the match goes through each item in turn."""
    best: frozenset[str] | None = None
    run = ""
    candidates: list[frozenset[str]] = []
    for op, av in [*items, (None, None)]:
        if op is _sre.LITERAL:
            run += chr(av)
            continue
        if run:
            candidates.append(frozenset({run}))
            run = ""
        if op is _sre.SUBPATTERN and not (av[1] & re.IGNORECASE):
            inner = _needed_in(av[3].data)
            if inner:
                candidates.append(inner)
        elif op is _sre.BRANCH:
            alternatives = [_needed_in(alt.data) for alt in av[1]]
            if alternatives and all(alternatives):
                candidates.append(frozenset().union(*alternatives))  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            inner = _needed_in(av[2].data)
            if inner:
                candidates.append(inner)
    for candidate in candidates:
        if best is None or min(map(len, candidate)) > min(map(len, best)):
            best = candidate
    return best


class _RedFlagScreen:
    """Which rows of a red-flag table a text says (RedFlag.matches), in table order, asking only the rows whose needed
    words the text holds: a row can only match where one of its patterns does, and each pattern needs one of a few
    literal strings (_needed_words), so most rows are turned away by a substring test instead of regex searches.
    Rows with a pattern of no needed words are always asked. Answers are kept per text (matches is a function of the
    row and the text alone); the rules ask about the same quote many times."""

    def __init__(self, flags: list[RedFlag]) -> None:
        self.rows = tuple(flags)
        self.needles: list[frozenset[str] | None] = []
        for flag in self.rows:
            needed = [_needed_words(p) for p in flag.patterns]
            self.needles.append(None if not needed or not all(needed) else frozenset().union(*needed))  # type: ignore[arg-type]
        self.every_needle = tuple(sorted(set().union(*(n for n in self.needles if n))))
        self.said: dict[str, tuple[RedFlag, ...]] = {}

    def in_text(self, text: str) -> tuple[RedFlag, ...]:
        said = self.said.get(text)
        if said is None:
            if len(self.said) >= 32768:
                self.said.clear()
            present = {n for n in self.every_needle if n in text}  # each needed word tested once, for all rows
            said = tuple(f for f, needles in zip(self.rows, self.needles)
                         if (needles is None or not needles.isdisjoint(present)) and f.matches(text))
            self.said[text] = said
        return said


@dataclass(frozen=True)
class Allergen:
    id: str
    terms: tuple[str, ...]
    classes: tuple[str, ...]
    drugs: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Therapy:
    id: str
    terms: tuple[str, ...]
    severity: str
    safety: bool
    why: str
    conditions: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class ActivityGroup:
    id: str
    members: tuple[str, ...]
    tags: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class ProcedureConcept:
    id: str
    terms: tuple[str, ...]
    sites: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Site:
    id: str
    terms: tuple[str, ...]
    conditions: tuple[str, ...]
    source: str


@dataclass
class Knowledge:
    classes: dict[str, DrugClass]
    drugs: list[Drug]
    conditions: dict[str, Concept]
    vaccines: list[Vaccine]
    measures: dict[str, Measure]
    interactions: list[Interaction]
    red_flags: list[RedFlag]
    allergens: list[Allergen]
    therapies: list[Therapy]
    activity_groups: list[ActivityGroup]
    restriction_cues: tuple[str, ...]
    clause_breaks: tuple[str, ...]
    conditional_breaks: tuple[str, ...]
    idioms: tuple[str, ...]
    soft_cues: tuple[str, ...]
    excess: tuple[re.Pattern[str], ...]
    diet_conflicts: list[dict[str, Any]]
    lapse: tuple[re.Pattern[str], ...]
    lapse_exempt: frozenset[str]
    imperatives: tuple[str, ...]
    procedures: list[ProcedureConcept]
    sites: list[Site]
    smoking: dict[str, Any]
    protected_classes: list[dict[str, Any]] = field(default_factory=list)  # plan words that say a restriction guards a high-risk drug
    # indexes
    drug_terms: list[tuple[str, Drug]] = field(default_factory=list)  # normalized term -> drug, longest first
    class_terms: list[tuple[str, str]] = field(default_factory=list)  # normalized lay term -> class id
    drug_by_name: dict[str, Drug] = field(default_factory=dict)

    def class_closure(self, class_ids: set[str] | tuple[str, ...] | list[str]) -> set[str]:
        """The classes and every broader class the tables hold facts about (lay families without facts drop out)."""
        vocab = load_vocabulary()
        out: set[str] = set()
        for cid in class_ids:
            out.add(cid)
            out |= vocab.ancestors(cid)
        return {cid for cid in out if cid in self.classes}

    def red_flags_in(self, text: str) -> list[RedFlag]:
        """The red-flag rows whose words the text says, not denied (RedFlag.matches), in table order: the answer of
        `[f for f in self.red_flags if f.matches(text)]`, screened and kept per text (_RedFlagScreen)."""
        screen = self.__dict__.get("_red_flag_screen")
        if screen is None or screen.rows != tuple(self.red_flags):  # built again if the table was changed
            screen = self.__dict__["_red_flag_screen"] = _RedFlagScreen(self.red_flags)
        return list(screen.in_text(text))

    def drug_classes(self, drug: Drug) -> set[str]:
        classes = set(drug.classes)
        for comp in drug.components:
            other = self.drug_by_name.get(comp)
            if other:
                classes |= set(other.classes)
        return self.class_closure(classes)


def _load(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


def _t(values: Any) -> tuple[str, ...]:
    return tuple(values or ())


# a negation cue within the last few words before a red-flag hit, in the same clause
_OTHER_SUBJECT_BEFORE = re.compile(
    r"\b(?:he|she|they|he's|she's|they've|my (?:son|daughter|husband|wife|partner|mom|mother|dad|father|friend|grandson|granddaughter"
    r"|sister|brother|kids?|baby|neighbou?r|dog|cat)|the (?:kids?|baby|dog))\s+(?:(?:almost|nearly|just|also|kind of|kinda)\s+)?$"
)
_DENIED_AFTER = re.compile(r"^[^?]{0,60}?\b(?:no|nope)\b[\s,.!-]+not (?:since|anymore|any more|in (?:years|months|ages))\b|^\W*(?:not anymore|not since)\b")
# A pattern that refers to its own groups by number, or sets flags inline, means something else inside an alternation.
_UNJOINABLE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(|\(\?[aiLmsux]+\)|\(\?P<")
_NEGATED_BEFORE = re.compile(
    r"\b(?:no|not|never|without|denies|deny|didn'?t|don'?t|haven'?t|hasn'?t|isn'?t|wasn'?t|nothing|zero|free of)\b"
    r"(?:\s+[\w']+){0,3}\s*$"
)


def _compile(patterns: list[str]) -> tuple[re.Pattern[str], ...]:
    # whole words: a pattern that starts with a letter must start a word ("rash" is not in "trash")
    return tuple(re.compile(("\\b" + p) if p[:1].isalpha() else p) for p in patterns)


_NO_FACTS: dict[str, Any] = {"indications": [], "stop": ["", False], "change": ["", False], "new": ["", False], "high_risk": False,
                             "source": ""}


def _drug_class(r: dict[str, Any], vocab: Vocabulary) -> DrugClass:
    """A class's clinical facts (this app's table; none for a class it has no row for) with its names and forms (the vocabulary)."""
    names = vocab.classes[r["id"]]
    return DrugClass(r["id"], names.label, tuple(names.terms), names.parents, _t(r["indications"]),
                     (r["stop"][0], bool(r["stop"][1])), (r["change"][0], bool(r["change"][1])),
                     (r["new"][0], bool(r["new"][1])), bool(r["high_risk"]), r["source"], _t(r.get("procedures")),
                     names.devices, names.forms, bool(r.get("periprocedural", False)), bool(r.get("cross_reactive", False)))


def _lay_class_terms(vocab: Vocabulary, clinical: set[str]) -> list[tuple[str, str]]:
    """(normalized lay name, class id): a class's own lay name reads as that class; a lay family ("heart pill") reads
    as the classes under it, or, with none under it, as the nearest broader classes."""
    pairs: set[tuple[str, str]] = set()
    for cls in vocab.classes.values():
        targets = {cls.id} & clinical if not cls.family else vocab.descendants(cls.id) & clinical
        targets = targets or vocab.ancestors(cls.id) & clinical
        for term in cls.terms:
            for target in targets:
                pairs.add((norm(term).strip(), target))
    return sorted(pairs, key=lambda kv: (-len(kv[0]), kv[1]))


def _add_coded_terms(conditions: dict[str, Concept]) -> None:
    """The terminology layer's lay terms join each condition concept's; a concept only the terminology layer has (with
    its codes and terms, e.g. peptic ulcer) joins the table, so the interaction and red-flag rows naming it can fire."""
    for cid, coded in condition_codes().items():
        if not coded.terms:
            continue
        known = conditions.get(cid)
        if known is None:
            conditions[cid] = Concept(cid, coded.terms, (), (), coded.source)
        else:
            conditions[cid] = replace(known, terms=tuple(dict.fromkeys(known.terms + coded.terms)))


@lru_cache(maxsize=1)
def load_knowledge() -> Knowledge:
    vocab = load_vocabulary()
    facts = {r["id"]: r for r in _load("drug_classes.json")}
    # every pharmacological class of the vocabulary; lay and dosage-form families are ways of referring, not classes
    classes = {cid: _drug_class(facts.get(cid, {**_NO_FACTS, "id": cid}), vocab) for cid, c in vocab.classes.items() if not c.family}
    drugs = list(vocab.drugs.values())
    conditions = {r["id"]: Concept(r["id"], _t(r["terms"]), _t(r["loinc"]), _t(r.get("related")), r["source"], _t(r.get("purpose")),
                           (r.get("diagnosis", ["medium", False])[0], bool(r.get("diagnosis", ["medium", False])[1]))) for r in _load("conditions.json")}
    _add_coded_terms(conditions)
    vaccines = [Vaccine(r["id"], _t(r["terms"]), _t(r["cvx"]), bool(r["live"]), r["source"], _t(r.get("indications"))) for r in _load("vaccines.json")]
    measures = {
        r["kind"]: Measure(
            r["kind"], _t(r["loinc"]), _t(r["terms"]), _t(r["conditions"]), _t(r["careplan_terms"]),
            tuple(RangeRule(x["id"], x["when"], x["severity"], bool(x["safety"]), x["text"], x["source"]) for x in r["rules"]),
        )
        for r in _load("measurements.json")
    }
    interactions = [Interaction(r["a"], r["b"], r["severity"], bool(r["safety"]), r["why"], r["source"], _t(r.get("loinc"))) for r in _load("interactions.json")]
    red_flags = [
        RedFlag(r["id"], _compile(r["patterns"]), _compile(r.get("exclude_patterns", [])), r["severity"], bool(r["safety"]), r["label"],
                _t(r["conditions"]), _t(r["classes"]), _t(r["loinc"]), _t(r.get("explained_by")), _t(r.get("requires_conditions")),
                bool(r.get("careplan")), r["source"], _t(r.get("requires_classes")),
                _compile(r.get("unexplained_patterns", [])), _t(r.get("dangerous_with")))
        for r in _load("red_flags.json")
    ]
    allergens = [Allergen(r["id"], _t(r["terms"]), _t(r["classes"]), _t(r["drugs"]), r["source"]) for r in _load("allergens.json")]
    careplan = _load("careplan.json")
    therapies = [Therapy(r["id"], _t(r["terms"]), r["severity"], bool(r["safety"]), r["why"], _t(r["conditions"]), r["source"]) for r in careplan["therapies"]]
    groups = [ActivityGroup(r["id"], _t(r["members"]), _t(r["tags"]), r["source"]) for r in careplan["activity_groups"]]
    procedures = [ProcedureConcept(r["id"], _t(r["terms"]), _t(r["sites"]), r["source"]) for r in _load("procedures.json")]
    sites = [Site(r["id"], _t(r["terms"]), _t(r["conditions"]), r["source"]) for r in _load("sites.json")]
    kb = Knowledge(
        classes=classes, drugs=drugs, conditions=conditions, vaccines=vaccines, measures=measures,
        interactions=interactions, red_flags=red_flags, allergens=allergens, therapies=therapies,
        activity_groups=groups, restriction_cues=_t(careplan["restriction_cues"]), clause_breaks=_t(careplan["clause_breaks"]),
        conditional_breaks=_t(careplan["conditional_breaks"]), idioms=_t(careplan["idioms"]),
        soft_cues=_t(careplan["soft_cues"]), excess=tuple(re.compile(p) for p in careplan["excess_patterns"]),
        diet_conflicts=list(careplan["diet_conflicts"]), lapse=tuple(re.compile(r"\b" + p) for p in careplan["lapse_patterns"]),
        lapse_exempt=frozenset(careplan["lapse_exempt_words"]), imperatives=_t(careplan["imperatives"]),
        procedures=procedures, sites=sites, smoking=_load("smoking.json"), protected_classes=list(careplan.get("protected_classes", [])),
    )
    terms: dict[str, Drug] = {}
    for drug in drugs:
        kb.drug_by_name[drug.name] = drug
        for term in (drug.name, *drug.aliases):
            key = norm(term).strip()
            terms.setdefault(key, drug)
    kb.drug_terms = sorted(terms.items(), key=lambda kv: -len(kv[0]))
    kb.class_terms = _lay_class_terms(vocab, set(classes))
    return kb


def table_rows() -> dict[str, list[dict[str, Any]]]:
    """Every curated row by table (for review and for the 'every row has a source' check)."""
    careplan = _load("careplan.json")
    smoking = _load("smoking.json")
    return {
        "drug_classes": _load("drug_classes.json"),
        "drugs": [{"name": d.id, "source": d.source} for d in load_vocabulary().drugs.values()],
        "conditions": _load("conditions.json"),
        "vaccines": _load("vaccines.json"),
        "measurements": [rule for m in _load("measurements.json") for rule in m["rules"]],
        "interactions": _load("interactions.json"),
        "red_flags": _load("red_flags.json"),
        "allergens": _load("allergens.json"),
        "procedures": _load("procedures.json"),
        "sites": _load("sites.json"),
        "therapies": careplan["therapies"],
        "activity_groups": careplan["activity_groups"],
        "diet_conflicts": careplan["diet_conflicts"],
        "protected_classes": careplan.get("protected_classes", []),
        "smoking": smoking["status_codes"],
        "alcohol": smoking["alcohol"]["status_words"],
    }


# --- the range-rule expressions: a tiny, safe evaluator (comparisons, and/or/not, names, has_condition) ----

_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Compare, ast.Lt, ast.LtE, ast.Gt,
            ast.GtE, ast.Eq, ast.NotEq, ast.Name, ast.Load, ast.Constant, ast.Call, ast.USub)


@lru_cache(maxsize=256)
def _parse(expr: str) -> ast.Expression:
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"unsupported expression in knowledge table: {expr!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "has_condition"):
            raise ValueError(f"unsupported call in knowledge table: {expr!r}")
    return tree


def eval_rule(expr: str, values: dict[str, Any], conditions: set[str]) -> bool:
    """Evaluate a range rule; a missing value makes its comparison false (never a crash)."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BoolOp):
            results = [ev(v) for v in node.values]
            return all(results) if isinstance(node.op, ast.And) else any(results)
        if isinstance(node, ast.UnaryOp):
            val = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return not val
            return -val if val is not None else None
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = ev(comp)
                if left is None or right is None:
                    return False
                ok = {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right,
                      ast.Eq: left == right, ast.NotEq: left != right}[type(op)]
                if not ok:
                    return False
                left = right
            return True
        if isinstance(node, ast.Name):
            return values.get(node.id)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Call):
            arg = node.args[0]
            return isinstance(arg, ast.Constant) and arg.value in conditions
        raise ValueError("unsupported node")

    return bool(ev(_parse(expr)))
