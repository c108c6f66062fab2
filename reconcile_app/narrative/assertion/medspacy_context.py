"""Assertion and subject of clinical targets in one chat sentence through medspaCy's ConText, with conversation rules as data.

Pipeline: spaCy's blank English tokenizer (no model, nothing downloaded), medspaCy's ConText component loaded with the
medspaCy default lexicon (minus the note-only rules the data file disables) and the chat rules of
narrative/data/context_rules.json. Tokens are matched on NORM, so chat contractions fold ('dont' -> 'do not').

Decision order for the subject of one target (each step a named function below):
  1. a beneficiary after the target ("insulin for my mom") makes it the other person's;
  2. otherwise the nearest experiencer cue before the target whose scope reaches it: the patient's own "I" ends another
     person's scope and the reverse (ConText terminating types); a clinician is never the experiencer;
  3. "my" right before the target, after another person's cue, is a possessive, not the experiencer;
  4. no cue: the caller's default (the patient, or the person the coach just asked about);
  5. a caregiver frame ("this is her son") swaps: her pronouns are the patient, the typist's "I" is another person.
Assertion flags are every ConText category whose modifier reaches the target (negated, uncertain, hypothetical, with
hearsay counted as hypothetical, historical); several can hold at once.
"""
from __future__ import annotations

import re
import sys
import threading
import types
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from .rules import RULES_PATH, RuleSet, RuleSpec, load_rules, phrase_expansions

PATIENT, OTHER = "patient", "other"
SELF_PRONOUNS = {"she": frozenset("she her hers herself".split()), "he": frozenset("he him his himself".split())}
_DEFAULT_SPAN_GROUP = "medspacy_spans"


@dataclass(frozen=True)
class Assertion:
    """ConText's verdict on one target: whose fact it is and how it is asserted."""

    subject: str = PATIENT  # "patient" or "other"
    relation: str = ""  # the other person ("brother", "named person", "caregiver"); "" for the patient
    negated: bool = False
    hypothetical: bool = False  # plans, conditionals, hearsay and media
    historical: bool = False
    uncertain: bool = False
    owner: str = ""  # the patient took someone else's supply: whose it was
    cues: tuple[str, ...] = ()  # "NEGATED_EXISTENCE:no", for explanations
    negation_start: int = -1  # character offset of the negation cue in the sentence ("not taking" reads as a stop)

    @property
    def is_patient_affirmed(self) -> bool:
        return self.subject == PATIENT and not (self.negated or self.hypothetical or self.historical or self.uncertain)

    @property
    def label(self) -> str:
        """One label in the own engine's order (a plan or the past outranks an inner negation: 'if I don't take it')."""
        for flag in ("hypothetical", "historical", "negated", "uncertain"):
            if getattr(self, flag):
                return flag
        return "affirmed"


@dataclass(frozen=True)
class SpeakerFrame:
    """Someone other than the patient is typing for the patient (found by `speaker_frame`)."""

    caregiver: str  # the typist's relation to the patient ("son"), or "caregiver"
    patient_words: frozenset[str] = frozenset()  # pronouns and relation words that now mean the patient


@dataclass(frozen=True)
class SpeakerEvent:
    """A change of typist inside a patient turn: a caregiver frame opened there, or the patient back (frame None)."""

    start: int  # character offsets of the cue in the turn
    end: int
    frame: SpeakerFrame | None
    text: str = ""  # the cue as typed ("This is Rhonda"): the typist's or the patient's name is read from it
    token_end: int = 0


@dataclass
class _Mod:
    start: int
    end: int
    category: str
    direction: str
    literal: str
    text: tuple[str, ...]  # NORM of each token
    metadata: dict[str, Any] = field(default_factory=dict)
    char_start: int = -1


class MedspacyContext:
    """One spaCy tokenizer plus one ConText component, built once; `assert_targets` is safe to call from threads."""

    def __init__(self, rules_path: Path = RULES_PATH) -> None:
        self.rules: RuleSet = load_rules(rules_path)
        self._nlp, self._context, self._frames, self._carried_out = _build(self.rules)
        self._frame_at_start = {self._nlp.vocab.strings[f"frame{i}"]: bool(spec.metadata.get("at_start"))
                                for i, spec in enumerate(self.rules.frame_patterns)}
        self._frame_whole_turn = {self._nlp.vocab.strings[f"frame{i}"]: bool(spec.metadata.get("whole_turn"))
                                  for i, spec in enumerate(self.rules.frame_patterns)}
        self._frame_cues = _frame_cues(self._nlp, self.rules.frame_patterns)
        self._hand_back = _matcher(self._nlp, self.rules.hand_back)
        self._lock = threading.Lock()  # the ConText component keeps per-call state on itself

    # ---- the interface the rules engine calls ------------------------------------------------------

    def assert_targets(self, sentence_text: str, target_spans: Sequence[tuple[int, int]], *,
                       names: Sequence[tuple[int, int]] = (), frame: SpeakerFrame | None = None,
                       default_subject: str = PATIENT, default_relation: str = "", antecedent: str = "") -> list[Assertion]:
        """One Assertion per target span (character offsets into sentence_text), in the same order.

        names: character spans of people's names (the engine's name finder); frame: a caregiver typing for the patient;
        default_subject/default_relation: whose fact a target is when the sentence names nobody (the engine's discourse
        state, e.g. the coach just asked about the husband).
        """
        if not target_spans:
            return []
        return self.analyse(sentence_text, target_spans, names=names).verdicts(
            target_spans, frame=frame, default_subject=default_subject, default_relation=default_relation,
            antecedent=antecedent)

    def analyse(self, sentence_text: str, target_spans: Sequence[tuple[int, int]] = (), *,
                names: Sequence[tuple[int, int]] = ()) -> "SentenceContext":
        """Run ConText once over a sentence; the result judges any target of it (`SentenceContext.verdicts`).

        target_spans only keep names off the targets: a target is never a person, whatever a name finder says about a
        capitalised brand ("his Coumadin"). Targets judged later against the same run are ConText's own second step
        (each modifier's scope against each target), so one run serves every rule that asks about the sentence.
        """
        doc = self._nlp.make_doc(sentence_text)
        for i, token in enumerate(doc):
            token.is_sent_start = i == 0  # one sentence: ConText's scopes run to its ends (faster than medspaCy windows)
        _set_names(doc, [n for n in names if not any(n[0] < e and s < n[1] for s, e in target_spans)])
        doc.spans[_DEFAULT_SPAN_GROUP] = []  # modifiers and scopes only; targets are matched in `verdicts`
        with self._lock:
            self._context(doc)
        modifiers = list(doc._.context_graph.modifiers)
        norms = [t.norm_ for t in doc]
        starts = [t.idx for t in doc]
        converted = [_as_mod(m, norms, starts) for m in modifiers]
        return SentenceContext(self, doc, modifiers, converted, norms)

    def assert_token_spans(self, sentence_text: str, tokens: Sequence[tuple[str, int, int]],
                           token_spans: Sequence[tuple[int, int]], **kwargs: Any) -> list[Assertion]:
        """The same for targets given as [start, end) indexes into the engine's own tokens (word, start, end) of this
        sentence, as the rules engine holds its lexicon hits; batch all of a sentence's targets into one call."""
        spans = [(tokens[s][1], tokens[max(e, s + 1) - 1][2]) if 0 <= s < len(tokens) else (-1, -1) for s, e in token_spans]
        return self.assert_targets(sentence_text, spans, **kwargs)

    def speaker_frame(self, turn_text: str, current: SpeakerFrame | None = None, *,
                      names: Sequence[tuple[int, int]] = ()) -> SpeakerFrame | None:
        """The caregiver frame of this turn: the one it opens, else `current`. Measured on the tune split, a frame
        belongs to the turn that shows it (caregivers type 'for a second' and hand back), so the engine should pass
        current=None unless it has its own reason to carry a frame."""
        if self._frame_cues is not None:
            low = turn_text.lower()
            words = set(_WORD.findall(low))
            if not any(all(alpha & words or any(w in low for w in other) for alpha, other in cue)
                       for cue in self._frame_cues):
                return current  # no frame can match: most turns, without tokenizing them
        doc = self._nlp.make_doc(turn_text)
        _set_names(doc, names)
        found = [m for m in self._frames(doc) if m[1] == 0 or not self._frame_at_start[m[0]]]
        if not found:
            return current
        _, start, end = max(found, key=lambda m: (m[2] - m[1], -m[1]))
        return _frame_from(tuple(t.norm_ for t in doc[start:end]), self.rules)

    def speaker_events(self, turn_text: str, *, names: Sequence[tuple[int, int]] = ()) -> list[SpeakerEvent]:
        """Where the typist of a patient turn changes, in text order: each caregiver frame it opens (the longest of
        overlapping matches) and each hand-back to the patient ("it's me again"). A frame carried from an earlier turn
        holds until one of these. Most turns hold no cue word of either and are not tokenized."""
        if self._frame_cues is not None:
            low = turn_text.lower()
            words = set(_WORD.findall(low))
            if not _HAND_BACK.search(low) and not any(
                    all(alpha & words or any(w in low for w in other) for alpha, other in cue) for cue in self._frame_cues):
                return []
        doc = self._nlp.make_doc(turn_text)
        _set_names(doc, names)
        found = sorted((m for m in self._frames(doc) if m[1] == 0 or not self._frame_at_start[m[0]]),
                       key=lambda m: (m[1], -(m[2] - m[1])))
        spans: list[list[int]] = []  # overlapping matches are one cue ("This is Kayla typing" + "typing for my mom")
        for key, start, end in found:
            if spans and start < spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
                spans[-1][2] = spans[-1][2] or self._frame_whole_turn[key]
            else:
                spans.append([start, end, self._frame_whole_turn[key]])
        events: list[SpeakerEvent] = []
        for start, end, whole_turn in spans:
            words = tuple(t.norm_ for t in doc[start:end])
            # a sign-off ("-- his wife") says who typed the whole message
            at = 0 if whole_turn else doc[start].idx
            events.append(SpeakerEvent(at, doc[end - 1].idx + len(doc[end - 1]), _frame_from(words, self.rules),
                                       doc[start:end].text, end))
        for _, start, end in self._hand_back(doc):
            events.append(SpeakerEvent(doc[start].idx, doc[end - 1].idx + len(doc[end - 1]), None, doc[start:end].text, end))
        return sorted(events, key=lambda e: e.start)

    # ---- decisions -----------------------------------------------------------------------------------

    def _verdict(self, start: int, end: int, on_target: list[_Mod], mods: list[_Mod], norms: list[str],
                 frame: SpeakerFrame | None, default_subject: str, default_relation: str,
                 antecedent: str = "") -> Assertion:
        flags: dict[str, bool] = {}
        cues = []
        negation_start = -1
        for mod in on_target:
            meaning = self.rules.categories.get(mod.category, "")
            if meaning and not meaning.startswith("subject:"):
                flags[meaning] = True
                cues.append(f"{mod.category}:{mod.literal}")
                if meaning == "negated" and (negation_start < 0 or mod.char_start > negation_start):
                    negation_start = mod.char_start  # the nearest negation before the target
        chosen = _beneficiary(on_target, end) or _nearest_before(on_target, start, self.rules.categories)
        chosen = _first_person_boundary(chosen, start, mods, self.rules.vocabularies)
        chosen = _object_of_care(chosen, end, mods, norms)
        chosen = _clinician_acts_on(chosen, mods)
        chosen = _possessive_determiner(chosen, start, mods, norms, self.rules.vocabularies)
        chosen = _clinician_pronoun(chosen, mods)
        chosen = _quoted_speaker(chosen, mods, norms)
        subject, relation, owner = self._subject_of(chosen, default_subject, default_relation)
        if frame is not None:
            subject, relation = _apply_frame(frame, chosen, subject, relation,
                                             _antecedent(chosen, mods, antecedent, self.rules.vocabularies,
                                                         self.rules.relation_sex))
            if subject == OTHER and relation in frame.patient_words:
                subject, relation = PATIENT, ""  # "typing for my dad ... dad's pills": the relation named is the patient
        if chosen is not None:
            cues.append(f"{chosen.category}:{chosen.literal}")
        return Assertion(subject, relation, flags.get("negated", False), flags.get("hypothetical", False),
                         flags.get("historical", False), flags.get("uncertain", False), owner, tuple(cues), negation_start)

    def _subject_of(self, chosen: _Mod | None, default_subject: str, default_relation: str) -> tuple[str, str, str]:
        if chosen is None:
            return default_subject, default_relation if default_subject == OTHER else "", ""
        meaning = self.rules.categories[chosen.category]
        if meaning == "subject:clinician":  # a clinician acts on whoever the sentence is about: the caller's default
            return default_subject, default_relation if default_subject == OTHER else "", ""
        if meaning == "subject:other":
            return OTHER, _relation_of(chosen, self.rules.vocabularies), ""
        owner = _relation_of(chosen, self.rules.vocabularies) if chosen.metadata.get("owner") else ""
        return PATIENT, "", owner


class SentenceContext:
    """ConText's modifiers of one sentence with their scopes, from one run; judges any target span of the sentence."""

    def __init__(self, owner: MedspacyContext, doc: Any, modifiers: list[Any], converted: list[_Mod],
                 norms: list[str]) -> None:
        self._owner = owner
        self._doc = doc
        self._modifiers = modifiers
        self._converted = converted
        self._mods = sorted(converted, key=lambda m: m.start)
        self._norms = norms
        self._carried: list[tuple[int, str]] | None = None  # (start token, literal) of "so I got it", read lazily

    def verdicts(self, target_spans: Sequence[tuple[int, int]], *, frame: SpeakerFrame | None = None,
                 default_subject: str = PATIENT, default_relation: str = "", antecedent: str = "") -> list[Assertion]:
        """One Assertion per target span (character offsets into the sentence), in the same order."""
        out = []
        for span in _spans(self._doc, target_spans):
            if span is None:
                relation = default_relation if default_subject == OTHER else ""
                out.append(Assertion(default_subject, relation, cues=("unaligned",)))
                continue
            # ConText's edge test (medspaCy ConTextGraph.apply_modifiers without max_targets, which no rule sets)
            on_target = [c for m, c in zip(self._modifiers, self._converted) if m.modifies(span)]
            verdict = self._owner._verdict(span.start, span.end, on_target, self._mods, self._norms, frame,
                                           default_subject, default_relation, antecedent)
            if verdict.hypothetical or (verdict.subject == OTHER and verdict.relation in _GENERIC):
                verdict = self._carried_out(verdict, span.end)
            out.append(verdict)
        return out

    def opens_hypothetical(self, within: int = 4) -> bool:
        """Whether the sentence opens as a plan, conditional or hearsay: such a cue among its first tokens ("I'm
        thinking about asking...", "might quit it if...")."""
        return any(self._owner.rules.categories.get(m.category) == "hypothetical" and m.start < within
                   for m in self._converted)

    def _carried_out(self, verdict: Assertion, end: int) -> Assertion:
        """A plan or claim the patient carried out later in the sentence ("..., so I got it") is no longer a plan."""
        if self._carried is None:
            strings = self._owner._nlp.vocab.strings
            norms = self._norms
            # "so I didn't": a negation right after the match undoes it
            self._carried = [(s, strings[k]) for k, s, e in self._owner._carried_out(self._doc)
                             if e >= len(norms) or norms[e] not in ("not", "never")]
        done = next((literal for start, literal in self._carried if start >= end), None)
        if done is None:
            return verdict
        # the one who carried it out says "I": the patient's fact even after another person's claim
        return replace(verdict, hypothetical=False, subject=PATIENT, relation="", cues=verdict.cues + (f"CARRIED_OUT:{done}",))


# ---- decision steps ---------------------------------------------------------------------------------------


def _beneficiary(on_target: list[_Mod], end: int) -> _Mod | None:
    """Step 1: a backward OTHER cue after the target ("insulin for my mom")."""
    after = [m for m in on_target if m.direction in ("BACKWARD", "BIDIRECTIONAL") and m.start >= end
             and m.category == "OTHER_EXPERIENCER"]
    return min(after, key=lambda m: m.start) if after else None


def _nearest_before(on_target: list[_Mod], start: int, categories: dict[str, str]) -> _Mod | None:
    """Step 2: the nearest experiencer cue before the target whose (terminated) scope reaches it."""
    before = [m for m in on_target if m.end <= start and categories.get(m.category, "").startswith("subject:")]
    return max(before, key=lambda m: m.start) if before else None


def _first_person_boundary(chosen: _Mod | None, start: int, mods: list[_Mod],
                           vocab: dict[str, frozenset[str]]) -> _Mod | None:
    """Step 2b: a clause boundary that opens a first-person clause ("..., and I get nosebleeds") ends the earlier
    person's scope and names the speaker as the new clause's experiencer; the terminator's match holds the 'I', so
    without this the clause would have no experiencer at all (ConText: a terminator ends scopes, it names nobody)."""
    self_words = vocab.get("self_word", frozenset())
    floor = chosen.end if chosen is not None else 0
    for mod in reversed(mods):
        if mod.end > start or mod.start < floor:
            continue
        if mod.direction == "TERMINATE" and mod.text and mod.text[-1] in self_words:
            return replace(mod, category="SELF_EXPERIENCER", direction="FORWARD", start=mod.end - 1)
    return chosen


_OBJECT_NEXT = frozenset({"on", "off", "a", "an", "some", "to", "in", "into", "back", "up", ".", ",", "!", "?", "and"})


def _object_of_care(chosen: _Mod | None, end: int, mods: list[_Mod], norms: list[str]) -> _Mod | None:
    """Step 2c: "they said it's a heart flutter and put him on a blood thinner": in a sentence where nobody speaks in
    the first person, a target that names no experiencer before it belongs to the one the clinicians act on, named
    after it as an object pronoun (ConText's experiencer is whoever the clause predicates the finding of)."""
    if chosen is not None and chosen.category != "CLINICIAN":
        return chosen
    if any(m.category == "SELF_EXPERIENCER" for m in mods):
        return chosen
    for mod in mods:
        if mod.start >= end and mod.category == "OTHER_EXPERIENCER" and mod.text in (("him",), ("her",)) \
                and (mod.end >= len(norms) or norms[mod.end] in _OBJECT_NEXT):
            return mod
    return chosen


def _clinician_acts_on(chosen: _Mod | None, mods: list[_Mod]) -> _Mod | None:
    """Step 2d: "took Dad in, his pressure was up so they added amlodipine": clinicians act on whoever the clause
    before them is about; the clinician cue ends that person's scope but hands the target to them, not the patient."""
    if chosen is None or chosen.category != "CLINICIAN":
        return chosen
    others_at = {m.start for m in mods if m.category == "OTHER_EXPERIENCER"}
    if any(m.category == "SELF_EXPERIENCER" and m.end not in others_at for m in mods):
        return chosen  # the patient speaks of themself in the sentence ("my mother" is only a possessive)
    # a kin word or a name, not a bare pronoun (often the clinician: "He was pleased... he started me on") nor
    # generic people ("the oncology people")
    before = [m for m in mods if m.end <= chosen.start and m.category == "OTHER_EXPERIENCER"
              and not set(m.text) & (_PRONOUNS | _GENERIC)]
    return before[-1] if before else chosen


def _possessive_determiner(chosen: _Mod | None, start: int, mods: list[_Mod], norms: list[str],
                           vocab: dict[str, frozenset[str]]) -> _Mod | None:
    """Step 3: "my brother has been taking my oxycodone": 'my' owns the drug and the brother, who takes it, is the
    experiencer; without a taking verb between them ("she saw my labetalol") 'my' stays the patient, and so does a
    measurement someone takes on the patient ("my wife took my pressure")."""
    if chosen is None or chosen.category != "SELF_EXPERIENCER" or chosen.text not in (("my",), ("our",)) \
            or chosen.end < start - 1 or norms[start] in vocab["measured"]:
        return chosen
    took = vocab["took_verb"]
    for mod in reversed([m for m in mods if m.end <= chosen.start]):
        if mod.direction == "TERMINATE" or mod.category == "SELF_EXPERIENCER":
            return chosen
        if mod.category == "OTHER_EXPERIENCER" and mod.direction == "FORWARD":
            return mod if any(w in took for w in norms[mod.end : chosen.start]) else chosen
    return chosen


def _clinician_pronoun(chosen: _Mod | None, mods: list[_Mod]) -> _Mod | None:
    """Step 3b: "the doctor looked at my A1c and she said it's not diabetes": a bare 'he'/'she' whose nearest person
    before it in the sentence is a clinician is that clinician speaking, not an experiencer (the caller's default
    applies, as when the sentence names nobody)."""
    if chosen is None or chosen.category != "OTHER_EXPERIENCER" or chosen.text not in (("he",), ("she",)):
        return chosen
    people = [m for m in mods if m.end <= chosen.start
              and m.category in ("CLINICIAN", "OTHER_EXPERIENCER", "SELF_EXPERIENCER")]
    return None if people and people[-1].category == "CLINICIAN" else chosen


_QUOTES = frozenset({'"', "\u201c", "\u201d", "''", "``"})


def _quoted_speaker(chosen: _Mod | None, mods: list[_Mod], norms: list[str]) -> _Mod | None:
    """Step 3c: 'My sister said "I have been on Lexapro for years"': the first person inside another person's quoted
    words is that person (the nearest person cue before the opening quote)."""
    if chosen is None or chosen.category != "SELF_EXPERIENCER":
        return chosen
    marks = [i for i, n in enumerate(norms) if n in _QUOTES]
    opening = next((marks[k] for k in range(0, len(marks) - 1, 2) if marks[k] < chosen.start < marks[k + 1]), None)
    if opening is None and len(marks) % 2 == 1 and marks[-1] < chosen.start:
        opening = marks[-1]  # an unclosed quote runs to the end of the sentence
    if opening is None:
        return chosen
    # the speaker is the nearest person before the quote, not the one spoken to ("my uncle told me")
    before = [m for m in mods if m.end <= opening and m.category in ("OTHER_EXPERIENCER", "SELF_EXPERIENCER", "CLINICIAN")
              and m.text not in (("me",), ("us",))]
    return before[-1] if before and before[-1].category == "OTHER_EXPERIENCER" else chosen


def _apply_frame(frame: SpeakerFrame, chosen: _Mod | None, subject: str, relation: str,
                 antecedent: tuple[str, str] = ("", "")) -> tuple[str, str]:
    """Step 5: a caregiver typing: the cared-for person's words are the patient, the typist's first person is not
    (but "we", the household, acts on the patient's treatment). A subject pronoun goes to the nearest person named
    before it by a kin word of its sex ("her aunt Rosa stays with us. She takes warfarin": the aunt), else to the
    patient (a pronoun's antecedent is its nearest agreeing mention; plural and sexless words agree with neither)."""
    if chosen is None:
        return subject, relation
    if chosen.category == "SELF_EXPERIENCER" and not chosen.metadata.get("owner"):
        if set(chosen.text) & _WE:
            return PATIENT, ""  # "we stopped those": the household acting on the patient's treatment
        return OTHER, frame.caregiver
    if chosen.category == "CLINICIAN" and chosen.text and chosen.text[0] in ("my", "me"):
        return OTHER, frame.caregiver  # "my doctor added a pill" from the typist: the typist's own clinician and care
    if chosen.category == "OTHER_EXPERIENCER" and frame.patient_words & set(chosen.text):
        near, sex = antecedent
        # only a subject pronoun looks back ("...my sister. She takes it"); "we give her" is the one cared for
        pronoun = _PRONOUN_SEX.get(chosen.text[0], "") if chosen.text in (("she",), ("he",)) else ""
        if pronoun and near and near != frame.caregiver and near not in frame.patient_words and sex == pronoun:
            return OTHER, near
        return PATIENT, ""
    return subject, relation


# generic people ("people with Parkinson's can...", "everyone says"): a general statement, like hearsay, that becomes
# the patient's fact only when the patient then acts on it ("so we kept her off it")
_GENERIC = frozenset({"people", "someone", "somebody", "everyone", "everybody"})
_WE = frozenset({"we", "us", "our", "ours", "ourselves"})
_PRONOUNS = SELF_PRONOUNS["she"] | SELF_PRONOUNS["he"] | {"they", "them", "their"}
_PRONOUN_SEX = {w: sex for sex, words in SELF_PRONOUNS.items() for w in words}


def _antecedent(chosen: _Mod | None, mods: list[_Mod], before_sentence: str, vocab: dict[str, frozenset[str]],
                sexes: dict[str, str]) -> tuple[str, str]:
    """The relation word of the nearest other person named before the chosen pronoun (in the sentence, else earlier in
    the turn: before_sentence), with the pronoun it takes ("sister" -> "she"; "" when either fits)."""
    if chosen is None:
        return "", ""
    near = before_sentence
    for mod in mods:
        if mod.end <= chosen.start and mod.category == "OTHER_EXPERIENCER":
            rel = _relation_of(mod, vocab)
            if rel not in ("other person", "named person"):
                near = rel
    return near, sexes.get(near, "")


def _relation_of(mod: _Mod, vocab: dict[str, frozenset[str]]) -> str:
    if mod.metadata.get("relation"):
        return str(mod.metadata["relation"])  # an idiom names the relation ("my better half": spouse)
    for word in mod.text:
        if word in vocab["relation"]:
            base = word[:-1] if word.endswith("s") and word[:-1] in vocab["relation"] else word
            return base
    if any(w in vocab["other_pronoun"] for w in mod.text):
        return "other person"
    return "named person"


_ON_BEHALF = frozenset({"for", "behalf", "asked", "wants", "told", "needs", "me"})


def _frame_from(words: tuple[str, ...], rules: RuleSet) -> SpeakerFrame:
    """'this is her son' -> the son types; 'she/her' and 'mom' are the patient. 'typing for my dad' -> 'dad' and either
    pronoun are the patient. 'this is Mike typing' -> either pronoun is the patient."""
    relations = rules.vocabularies["relation"]
    patient: set[str] = set()
    if "her" in words:
        patient |= SELF_PRONOUNS["she"]
    if "his" in words or "him" in words:
        patient |= SELF_PRONOUNS["he"]
    rels = [w for w in words if w in relations]
    caregiver = "caregiver"
    # "typing for my dad", "mom asked me to type": the relation named is the patient; "Son here": the typist
    if rules.typing_words & set(words) and set(words) & _ON_BEHALF:
        patient |= set(rels)  # "typing for my dad", "mom asked me to type": the relation named is the patient
    elif rels:
        caregiver = rels[-1]  # "this is her son": the relation named is the typist
        patient |= rules.inverse_relations.get(caregiver, frozenset())
    if not patient & (SELF_PRONOUNS["she"] | SELF_PRONOUNS["he"]):
        patient |= SELF_PRONOUNS["she"] | SELF_PRONOUNS["he"]  # the patient's sex is not said: either pronoun
    return SpeakerFrame(caregiver, frozenset(patient))


# ---- spaCy plumbing ---------------------------------------------------------------------------------------


def _spans(doc: Any, char_spans: Sequence[tuple[int, int]]) -> list[Any]:
    out = []
    for start, end in char_spans:
        span = doc.char_span(start, end, alignment_mode="expand") if 0 <= start < end <= len(doc.text) else None
        out.append(span if span is not None and len(span) else None)
    return out


def _set_names(doc: Any, names: Sequence[tuple[int, int]]) -> None:
    if not names:
        return
    from spacy.tokens import Span
    from spacy.util import filter_spans

    spans = [s for s in _spans(doc, names) if s is not None]
    doc.ents = filter_spans([Span(doc, s.start, s.end, label="PERSON") for s in spans])


def _as_mod(modifier: Any, norms: list[str], starts: list[int]) -> _Mod:
    start, end = modifier.modifier_span
    rule = modifier.rule
    meta = rule.metadata or {}
    return _Mod(start, end, rule.category, rule.direction.upper(), meta.get("rule", rule.literal), tuple(norms[start:end]),
                meta, starts[start])


def _quickumls_placeholder() -> None:
    """medspaCy's util module imports QuickUMLS for its UMLS matcher, which this app never adds; QuickUMLS imports nltk,
    scipy and scikit-learn (seconds at every process start and ~100 MB). Unless QuickUMLS is already loaded, an empty
    stand-in module is registered in its place: the 'medspacy_quickumls' pipe then does not exist, nothing else changes."""
    if "quickumls" in sys.modules:
        return
    package = types.ModuleType("quickumls")
    package.__path__ = []  # a package with no submodules on disk
    component = types.ModuleType("quickumls.spacy_component")
    component.__doc__ = "stand-in registered by reconcile: QuickUMLS is not loaded"
    package.spacy_component = component  # type: ignore[attr-defined]
    sys.modules["quickumls"] = package
    sys.modules["quickumls.spacy_component"] = component


def _build(rules: RuleSet) -> tuple[Any, Any, Any, Any]:
    """spaCy blank English + ConText with our rules; medspaCy's import is kept from changing global warning filters."""
    with warnings.catch_warnings():
        _quickumls_placeholder()
        import spacy
        from spacy.matcher import Matcher
        from medspacy.context import ConText, ConTextRule
        import medspacy
    _quiet_loguru()
    nlp = spacy.blank("en")
    context = ConText(nlp, rules=None, phrase_matcher_attr="NORM", input_span_type="group",
                      span_group_name=_DEFAULT_SPAN_GROUP, terminating_types=rules.terminating_types,
                      max_scope=None, span_attrs=None)
    if rules.use_default_lexicon:
        default = Path(medspacy.__file__).resolve().parents[1] / "resources" / "en" / "context_rules.json"
        for rule in ConTextRule.from_json(str(default)):
            if rule.literal.lower() in rules.disabled_defaults:
                continue
            scope = rule.max_scope
            if scope is None and rules.default_max_scope and rule.direction.upper() not in ("TERMINATE", "PSEUDO"):
                scope = rules.default_max_scope
            context.add(_context_rules(ConTextRule, rule.literal, rule.category, rule.direction, rule.pattern, scope,
                                       {"source": "medspacy"}))
    for spec in rules.rules:
        context.add(_context_rules(ConTextRule, spec.literal, spec.category, spec.direction, spec.pattern,
                                   spec.max_scope, {**spec.metadata, "source": spec.source}))
    frames = Matcher(nlp.vocab)
    for i, spec in enumerate(rules.frame_patterns):
        frames.add(f"frame{i}", [spec.pattern])
    carried_out = Matcher(nlp.vocab)
    for spec in rules.carried_out:
        carried_out.add(spec.literal, [spec.pattern])
    return nlp, context, frames, carried_out


def _context_rules(rule_cls: Any, literal: str, category: str, direction: str, pattern: Any, max_scope: int | None,
                   metadata: dict[str, Any]) -> list[Any]:
    """One ConTextRule per phrase when the pattern expands to phrases (fast lookup), else the token pattern itself."""
    meta = {**metadata, "rule": literal}
    if direction.upper() in ("TERMINATE", "PSEUDO"):
        # medspaCy's tuple_overlaps misses a scope lying strictly inside another, so a terminator whose scope is the
        # whole sentence never cuts a short negation window; a one-token scope around it overlaps every scope that
        # contains it. (A pseudo-trigger never modifies anything; a soft boundary only cuts through terminated_by.)
        max_scope = 1
    phrases = phrase_expansions(pattern) if isinstance(pattern, list) else None
    if phrases is not None:
        return [rule_cls(p, category, direction=direction, max_scope=max_scope, metadata=meta) for p in phrases]
    return [rule_cls(literal, category, pattern=pattern, direction=direction, max_scope=max_scope, metadata=meta)]


_WORD = re.compile(r"[^\W\d_]+")
# what every hand-back pattern needs in the lowered turn (a turn without any is not tokenized for them)
_HAND_BACK = re.compile(r"\b(?:it'?s|its|it is) me\b|\b(?:i'?m|i am) back\b|\bback to me\b|\b(?:she|he)(?:'?s| is) back\b"
                        r"|\b(?:handing|passing|giving) (?:it|the|this|her|him)\b")  # a letter run: every token spaCy makes of letters alone (it splits at hyphens)


def _matcher(nlp: Any, patterns: list[RuleSpec]) -> Any:
    """A token Matcher of the given patterns (one label each, by position)."""
    from spacy.matcher import Matcher

    matcher = Matcher(nlp.vocab)
    for i, spec in enumerate(patterns):
        matcher.add(f"{spec.literal}#{i}", [spec.pattern])
    return matcher


def _frame_cues(nlp: Any, patterns: list[RuleSpec]) -> list[list[tuple[frozenset[str], tuple[str, ...]]]] | None:
    """For each frame pattern, what each token it cannot match without needs in the lowered turn: one of its letter
    words as a word, or one of its other strings (punctuation, and the pieces of tokenizer exceptions whose NORM is one
    of its words: "i'm" gives "am") anywhere. A turn that lacks one for every pattern opens no frame. None when a
    pattern has no such token (the matcher always runs)."""
    from spacy.symbols import NORM, ORTH

    pieces: dict[str, set[str]] = {}
    for exc in nlp.Defaults.tokenizer_exceptions.values():
        for attrs in exc:
            if NORM in attrs:
                pieces.setdefault(attrs[NORM].lower(), set()).add(attrs[ORTH].lower())
    cues = []
    for spec in patterns:
        needed = []
        for token in spec.pattern or []:
            test = token.get("NORM", token.get("ORTH", token.get("LOWER")))
            words = {test} if isinstance(test, str) else set(test.get("IN", ())) if isinstance(test, dict) else set()
            words = {w.lower() for w in words}
            if token.get("OP") in (None, "+", "1") and words:
                letters = frozenset(w for w in words if _WORD.fullmatch(w))
                other = (words - letters) | {p for w in words for p in pieces.get(w, ())}
                needed.append((letters, tuple(sorted(other))))
        if not needed:
            return None
        cues.append(needed)
    return cues


def _quiet_loguru() -> None:
    """PyRuSH (pulled in by medspaCy, unused here) logs through loguru; keep it out of the app's logs."""
    try:
        from loguru import logger
    except ImportError:  # pragma: no cover - loguru comes with medspaCy
        return
    logger.disable("PyRuSH")


_DEFAULT: MedspacyContext | None = None
_DEFAULT_LOCK = threading.Lock()


def default_context() -> MedspacyContext:
    """The process-wide instance (spaCy and the rules load once, about a second)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = MedspacyContext()
        return _DEFAULT


def assert_targets(sentence_text: str, target_spans: Sequence[tuple[int, int]], **kwargs: Any) -> list[Assertion]:
    """Module-level shortcut to `default_context().assert_targets` (see there)."""
    return default_context().assert_targets(sentence_text, target_spans, **kwargs)


def speaker_frame(turn_text: str, current: SpeakerFrame | None = None, **kwargs: Any) -> SpeakerFrame | None:
    """Module-level shortcut to `default_context().speaker_frame` (see there)."""
    return default_context().speaker_frame(turn_text, current, **kwargs)
