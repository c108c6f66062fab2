"""Loads the ConText rules of narrative/data/context_rules.json: vocabularies expanded, provenance checked, defaults filtered."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

RULES_PATH = Path(__file__).resolve().parent.parent / "data" / "context_rules.json"
DIRECTIONS = frozenset({"FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO"})
# The flag or subject each category sets; TERMINATE and PSEUDO set nothing.
STRUCTURAL = frozenset({"TERMINATE", "PSEUDO"})


class RulesError(ValueError):
    """The rules file is malformed: a rule without a source, an unknown category, a missing vocabulary."""


@dataclass(frozen=True)
class RuleSpec:
    """One ConText rule as data, before it becomes a medspaCy ConTextRule."""

    literal: str
    category: str
    direction: str
    source: str
    phenomenon: str
    pattern: list[dict[str, Any]] | None = None
    max_scope: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleSet:
    version: str
    sources: dict[str, str]
    categories: dict[str, str]  # category -> "negated" | "uncertain" | ... | "subject:other"
    terminating_types: dict[str, list[str]]
    rules: list[RuleSpec]
    vocabularies: dict[str, frozenset[str]]
    use_default_lexicon: bool
    default_max_scope: int | None
    disabled_defaults: frozenset[str]
    frame_patterns: list[RuleSpec]
    typing_words: frozenset[str]  # a frame naming one of these ("typing for my dad") names the patient, not the typist
    inverse_relations: dict[str, frozenset[str]]  # the typist's relation -> what the patient is to the typist
    carried_out: list[RuleSpec] = field(default_factory=list)  # "so I got it": an earlier plan or claim was done
    hand_back: list[RuleSpec] = field(default_factory=list)  # "it's me again": the patient types again, a frame ends
    relation_sex: dict[str, str] = field(default_factory=dict)  # "sister" -> "she": the pronoun a kin word takes


def _vocabularies(raw: dict[str, Any], sources: dict[str, str]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for name, entry in raw.items():
        if entry.get("source") not in sources or not entry.get("phenomenon"):
            raise RulesError(f"vocabulary {name!r} needs a known source and a phenomenon")
        terms = {t.lower() for t in entry["terms"]}
        if name == "relation":
            # "my husbands ozempic", "the twins": plural and apostrophe-less possessive forms
            terms |= {t + "s" for t in terms if not t.endswith("s") and "-" not in t}
        out[name] = frozenset(terms)
    return out


def _expand(value: Any, vocab: dict[str, frozenset[str]]) -> Any:
    """Replace '@name' (alone or inside a list) by the sorted terms of that vocabulary."""
    if isinstance(value, str) and value.startswith("@"):
        if value[1:] not in vocab:
            raise RulesError(f"unknown vocabulary {value!r}")
        return sorted(vocab[value[1:]])
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            expanded = _expand(item, vocab)
            if isinstance(item, str) and item.startswith("@"):
                out.extend(expanded)
            else:
                out.append(expanded)
        return out
    if isinstance(value, dict):
        return {k: _expand(v, vocab) for k, v in value.items()}
    return value


def _spec(raw: dict[str, Any], vocab: dict[str, frozenset[str]], sources: dict[str, str],
          categories: dict[str, str], *, frame: bool = False, default_source: str = "") -> RuleSpec:
    literal = raw.get("literal", "")
    source = raw.get("source", default_source)
    if not literal or source not in sources:
        raise RulesError(f"rule {literal!r} needs a literal and a known source")
    category = raw.get("category", "FRAME" if frame else "")
    direction = raw.get("direction", "FORWARD")
    if not frame:
        if category not in categories and category not in STRUCTURAL:
            raise RulesError(f"rule {literal!r}: unknown category {category!r}")
        if direction not in DIRECTIONS:
            raise RulesError(f"rule {literal!r}: unknown direction {direction!r}")
        if not raw.get("phenomenon"):
            raise RulesError(f"rule {literal!r} must name the phenomenon it covers")
    pattern = _expand(raw["pattern"], vocab) if raw.get("pattern") else None
    metadata = dict(raw.get("metadata") or {})
    if raw.get("at_start"):
        metadata["at_start"] = True  # a frame tag counts only at the very start of the turn
    return RuleSpec(literal, category, direction, source, raw.get("phenomenon", ""), pattern, raw.get("max_scope"),
                    metadata)


def parse_rules(data: dict[str, Any]) -> RuleSet:
    """Validate and expand the rules file's content (a dict, as json.load returns it)."""
    sources = dict(data["sources"])
    categories = dict(data["categories"])
    vocab = _vocabularies(data.get("vocabularies", {}), sources)
    rules = [_spec(r, vocab, sources, categories) for r in data["rules"]]
    defaults = data.get("default_lexicon", {})
    for entry in defaults.get("disabled", []):
        if not entry.get("why"):
            raise RulesError(f"disabled default rule {entry.get('literal')!r} needs a reason")
    frames = data.get("caregiver_frames", {})
    frame_source = frames.get("source", "")
    frame_patterns = [_spec(r, vocab, sources, categories, frame=True, default_source=frame_source)
                      for r in frames.get("patterns", [])]
    carried = data.get("carried_out", {})
    hand_back = [_spec(r, vocab, sources, categories, frame=True, default_source=frame_source)
                 for r in frames.get("hand_back", [])]
    sexes = {w: sex for sex, words in frames.get("relation_pronoun", {}).get("terms", {}).items() for w in words}
    carried_out = [_spec(r, vocab, sources, categories, frame=True, default_source=carried.get("source", ""))
                   for r in carried.get("patterns", [])]
    for kind, terminators in data.get("terminating_types", {}).items():
        unknown = {kind, *terminators} - set(categories)
        if unknown:
            raise RulesError(f"terminating_types names unknown categories {sorted(unknown)}")
    return RuleSet(
        version=str(data.get("version", "")),
        sources=sources,
        categories=categories,
        terminating_types={k: list(v) for k, v in data.get("terminating_types", {}).items()},
        rules=rules,
        vocabularies=vocab,
        use_default_lexicon=bool(defaults.get("use", False)),
        default_max_scope=defaults.get("max_scope"),
        disabled_defaults=frozenset(e["literal"].lower() for e in defaults.get("disabled", [])),
        frame_patterns=frame_patterns,
        typing_words=frozenset(frames.get("typing_words", [])),
        inverse_relations={k: frozenset(v) for k, v in frames.get("inverse_relations", {}).items()},
        carried_out=carried_out,
        hand_back=hand_back,
        relation_sex=sexes,
    )


@lru_cache(maxsize=4)
def load_rules(path: Path = RULES_PATH) -> RuleSet:
    return parse_rules(json.loads(Path(path).read_text(encoding="utf-8")))


def phrase_expansions(pattern: list[dict[str, Any]] | None, limit: int = 400) -> list[str] | None:
    """The phrases a fixed-length token pattern matches, when it has only equality and IN tests on NORM or LOWER and
    optional ('?') tokens; None when it needs the token Matcher (wildcards, repeats, NOT_IN, ENT_TYPE) or is too broad.

    spaCy's PhraseMatcher looks phrases up by hash, so expanded rules cost nothing per pattern at match time, while each
    token pattern is tried at every token of every sentence (the Matcher was 70% of the component's time)."""
    if not pattern:
        return None
    phrases: list[list[str]] = [[]]
    for token in pattern:
        op = token.get("OP")
        keys = set(token) - {"OP"}
        if op not in (None, "?") or len(keys) != 1 or keys.pop() not in ("NORM", "LOWER"):
            return None
        test = token.get("NORM", token.get("LOWER"))
        if isinstance(test, str):
            options = [test]
        elif isinstance(test, dict) and set(test) == {"IN"} and isinstance(test["IN"], list):
            options = list(test["IN"])
        else:
            return None
        grown = [p + [o] for p in phrases for o in options]
        if op == "?":
            grown += phrases
        phrases = grown
        if len(phrases) > limit:
            return None
    out = sorted({" ".join(p) for p in phrases if p})
    return out or None
