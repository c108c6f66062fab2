"""Who a sentence is about: names, people asked about, quoted speakers, family history (subject and assertion cues)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from reconcile_app.narrative.types import Subject
from reconcile_app.terminology.lexicon import Hit

from .. import context as ctx
from ..clauses import Sentence
from ..cues import cue_pattern, cue_words
from .state import Mention, TurnState


_CAPITAL_NOT_NAME = cue_words("capital_not_name")
_PERSON_VERB = cue_pattern("person_verb")
_NOT_A_PERSON = cue_words("not_a_person")
_FINITE_VERBS = cue_words("finite_verbs")
_NAME_NEXT_INITIAL = cue_words("name_next_initial")
_FAMILY_HISTORY = cue_pattern("family_history")
_OWN_CLAIM = cue_pattern("own_claim")
_ADVERBS = cue_words("adverbs")
_PLACE_PREPS = cue_words("place_preps")
_NAME_S_VERBS = cue_words("name_s_verbs")
_NAME_NEXT_PAST = cue_words("name_next_past")
_NAME_NEXT = cue_words("name_next")


def _clinician_context(previous: list[TurnState]) -> bool:
    for state in reversed(previous[-2:]):
        if any(w in ctx.CLINICIANS for s in state.sentences for w, _, _ in s.tokens):
            return True
    return False


_YOUR_RELATION = re.compile(r"\b(?:your|ur)\s+(" + "|".join(sorted(ctx.RELATIONS, key=len, reverse=True)) + r")\b")


def _asked_about_other(previous: list[TurnState], is_patient: Callable[[str], bool] | None = None) -> str:
    """The coach's last question was about someone else ("How's your husband doing?"): the answer starts there."""
    if not previous or previous[-1].turn.speaker == "patient":
        return ""
    m = _YOUR_RELATION.search(previous[-1].low)
    if m and "?" in previous[-1].low:
        return m.group(1)
    # "How is Maria doing after her surgery?", "Did Tom's scan come back?": a question about a named third person
    text = previous[-1].turn.text if isinstance(previous[-1].turn.text, str) else ""
    for q in re.findall(r"[^.!?]*\?", text):
        if re.search(r"\b(?:you|your|ur|u)\b", q, re.I):
            continue
        m = _ASKED_NAME.search(q)
        name = (m.group(1) or m.group(2)).lower() if m else ""
        if name and name not in _CAPITAL_NOT_NAME and name not in ctx.CLINICIANS and name not in _NOT_A_PERSON \
                and not (is_patient and is_patient(name)):
            return "named person"  # (the coach asking a typist "How is Irv doing?" about the patient is no other)
    # "Is he doing okay?", "How is she feeling?": a question about a third person and not about "you"
    for sent in previous[-1].sentences:
        if not sent.low.rstrip().endswith("?"):
            continue
        words = {w for w, _, _ in sent.tokens}
        if words & _THIRD_PERSON_SUBJECT and not words & {"you", "your", "ur", "u", "you're", "youre", "yourself"}:
            return "other person"
    return ""


_ASKED_NAME = cue_pattern("asked_name")
_HEALTH_EVENT = cue_pattern("health_event")


def _neutral_follow_up(coach: TurnState) -> bool:
    """A coach reply that asks on without turning to the patient ("Oh no, what happened?", "Is everything ok?")."""
    if "?" not in coach.low:
        return False
    return not re.search(r"\b(you|your|ur|u|you're|youre|yourself)\b", coach.low)


_THIRD_PERSON_SUBJECT = cue_words("third_person_subject")
_AGENT_VERBS = frozenset({"started", "stopped", "quit", "switched", "finished", "began", "tried"})
_FIRST_PERSON_SUBJECT = frozenset({"i", "my", "i'm", "im", "i've", "ive", "i'd", "mine", "we", "our"})


def _names(text: str, sent: Sentence, words: list[str]) -> set[int]:
    """Token indexes of capitalised person names ("Gary wants...", "Hector's", "my sister Deb")."""
    out: set[int] = set()
    third_person_later = any(w in ctx.OTHER_PRONOUNS for w in words[2:])
    for i, (word, s, _) in enumerate(sent.tokens):
        pos = sent.start + s
        base = word[:-2] if word.endswith("'s") else word
        if pos >= len(text) or not text[pos].isupper() or word in _CAPITAL_NOT_NAME or word in ctx.OTHER_PRONOUNS \
                or word in ctx.SELF_WORDS or base in _NOT_A_PERSON or base in _CAPITAL_NOT_NAME:
            continue
        raw = text[pos : pos + len(word)]
        if not word.replace("'", "").replace("-", "").isalpha():
            continue  # "A1c", "B12": lab and vitamin names, not people
        if raw.isupper() and len(raw) > 1:
            continue  # acronyms and shouting, not names
        prev = words[i - 1] if i > 0 else ""
        if prev in ("dr", "doctor", "nurse", "at", "the", "to", "from", "in", "dr."):
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        # sentence-initial capitals are ordinary words ("Better, started on...") unless a present-tense
        # third-person verb follows ("Gary wants...", "Deb has...")
        verbs = _NAME_NEXT_INITIAL if i == 0 else _NAME_NEXT
        if word.endswith("'s") or nxt in verbs or prev in ctx.RELATIONS:
            out.add(i)
        elif i > 0 and prev == "for" and raw[0].isupper() and not raw.isupper():
            out.add(i)  # "the new inhaler for Timmy": a named beneficiary (drug and place names are lexicon hits)
        elif i == 0 and nxt in _PLACE_PREPS and any(words[k] in _NAME_S_VERBS and words[k + 1 : k + 2] != ["been"] for k in range(i + 2, min(i + 7, len(words)))) and not word.endswith("ly"):
            # "Ellen from church takes Ozempic", "Raj next door has gout": a name qualified by where the person is from
            out.add(i)
        elif i == 0 and nxt in _PLACE_PREPS and third_person_later and not word.endswith("ly") and \
                any(w in _NAME_NEXT_PAST or w in ("got", "was", "is") for w in words[i + 2 : i + 6]):
            out.add(i)  # "Bob from work got diagnosed with diabetes, he's on metformin"
        elif i == 0 and not word.endswith("ly") and third_person_later and (
                nxt in _NAME_NEXT_PAST or (nxt in _ADVERBS and i + 2 < len(words) and words[i + 2] in _NAME_NEXT_PAST)):
            # "Marco had a seizure at school, his mom...": a sentence-initial capital with a past-tense verb is a
            # name when the sentence goes on about "he"/"she"; without that it is chat dropping "I" ("Finally had...")
            out.add(i)
        elif i == 0 and nxt in _AGENT_VERBS and text[pos + len(word) : pos + len(word) + 1] == " " \
                and base not in _NOT_A_PERSON and base not in _ADVERBS and not word.endswith("ly") \
                and not set(words) & _FIRST_PERSON_SUBJECT:
            # "Gary started a statin and reads me the side effects": a verb of starting or stopping needs an agent,
            # and a capital before it in a sentence where the patient never says "I"/"my" is that agent's name
            out.add(i)
    # chat often skips capitals: "darlene is on blood thinners", "bob takes metformin"
    for i in range(len(words) - 1):
        word = words[i]
        if i in out or not word.isalpha() or len(word) < 3 or word in _NOT_A_PERSON or word in ctx.SELF_WORDS \
                or word in ctx.OTHER_PRONOUNS or word in ctx.RELATIONS or word in ctx.CLINICIANS:
            continue
        tail = " ".join(words[i + 1 : i + 4])
        if _PERSON_VERB.match(tail):
            out.add(i)
    return out


_QUOTE = cue_pattern("quote")
_SPEECH_BEFORE_QUOTE = cue_pattern("speech_before_quote")


def _quoted_speakers(sent: Sentence, people: list) -> list:
    """'My sister said "I have been on Lexapro for years"': first person inside another person's quoted words is them."""
    if '"' not in sent.low and "\u201c" not in sent.low:
        return people
    for m in _QUOTE.finditer(sent.low):
        if not _SPEECH_BEFORE_QUOTE.search(sent.low[: m.start()]):
            continue
        first = next((k for k, t in enumerate(sent.tokens) if t[1] >= m.start(1)), len(sent.tokens))
        last = next((k for k, t in enumerate(sent.tokens) if t[1] >= m.end(1)), len(sent.tokens))
        speaker = next((p for p in reversed(people) if p.index < first), None)
        if speaker is None or speaker.kind not in ("other", "owner"):
            continue
        people = [ctx.Person(p.index, "other", speaker.relation) if p.kind == "self" and first <= p.index < last else p
                  for p in people]
    return people


@dataclass
class Discourse:
    """Whom a patient turn's sentences are about as it goes on: the other person the answer is about (asked by the
    coach or carried from the last message) until the patient speaks of themself, the last relation named, the other
    person the previous sentence spoke of, and the experiencer it ended on."""

    clinician_context: bool
    carry: str
    asked_other: bool
    last_relation: str = ""
    prev_other: str = ""
    prev_other_health: bool = False
    prev_tail: str = ""


def _discourse_at(previous: list[TurnState], is_patient: Callable[[str], bool] | None = None) -> Discourse:
    """The discourse a patient turn starts in, from the turns before it (is_patient: the patient's own names)."""
    carry = _asked_about_other(previous, is_patient)
    if not carry and previous and previous[-1].turn.speaker == "patient":
        carry = previous[-1].carry_out  # the answer about someone else goes on in the next message
    if not carry and len(previous) >= 2 and previous[-1].turn.speaker != "patient" and \
            previous[-2].turn.speaker == "patient" and previous[-2].tail_other and _neutral_follow_up(previous[-1]):
        # "My brother was in the hospital." - "Oh no, what happened?" - "Heart attack. Two stents.": the
        # coach's follow-up does not turn to the patient, so the answer is still about the brother
        carry = previous[-2].tail_other
    return Discourse(_clinician_context(previous), carry, bool(carry))


def _sentence_people(d: Discourse, sent: Sentence, words: list[str], names: set[int], hits: list[Hit]) -> list[ctx.Person]:
    """The people a sentence speaks of, in order: its own experiencer cues (not inside a terminology hit), the person
    the discourse carries, speakers of quoted words, then a family history."""
    skip = {i for h in hits for i in range(h.tok_start, h.tok_end)}
    people = ctx.find_people(words, names, d.clinician_context, skip=skip, relation_hint=d.carry or d.last_relation)
    d.last_relation = next((p.relation for p in reversed(people) if p.kind in ("other", "owner")
                            and p.relation not in ("", "other person")), d.last_relation)
    people = _inherited_experiencer(d, people, words)
    people = _quoted_speakers(sent, people)
    people = _family_history(sent, words, people)
    if any(p.kind == "self" for p in people):
        d.carry = ""
    others = [p for p in people if p.kind in ("other", "owner")]
    d.prev_other = "" if any(p.kind == "self" for p in people) else (others[-1].relation if others else "")
    return people


def _inherited_experiencer(d: Discourse, people: list[ctx.Person], words: list[str]) -> list[ctx.Person]:
    """A sentence with no experiencer of its own inherits one from the discourse (the first rule that applies)."""
    if d.carry and not any(p.kind == "self" for p in people):
        # the coach asked about someone else ("How's your husband?"): the answer is about them
        # until the patient speaks of themself
        return [ctx.Person(-1, "other", d.carry)] + people
    if d.prev_other and not people and len(words) <= 8 and not (set(words) & _FINITE_VERBS):
        # a verbless fragment right after a sentence about someone else ("Grandma's on hospice. Morphine
        # every few hours.") continues it; fragments with a verb are usually the patient's own
        return [ctx.Person(-1, "other", d.prev_other)]
    if d.prev_tail and (d.prev_other_health or d.asked_other) and not any(p.kind == "self" for p in people) and \
            not any(p.kind in ("other", "owner") and p.relation not in ("", "other person", d.prev_tail) for p in people):
        # "Took Dad to his checkup. BP was 170/95 so they added amlodipine.": right after a sentence about
        # someone else's health, a sentence with no experiencer of its own goes on about them
        return [ctx.Person(-1, "other", d.prev_other)] + people
    return people


def _family_history(sent: Sentence, words: list[str], people: list[ctx.Person]) -> list[ctx.Person]:
    """"X runs in my family", "family history of X": relatives' conditions unless the patient claims it too; a
    first-person clause after it ("so I'm due for...") is the patient's again."""
    fam = _FAMILY_HISTORY.search(sent.low)
    if not fam:
        return people
    tokens = sent.tokens
    own = bool(_OWN_CLAIM.search(sent.low))
    fam_end = next((k for k, t in enumerate(tokens) if t[1] >= fam.end()), len(tokens))
    fam_end = next((k for k in range(fam_end, len(words)) if ctx._is_terminator(words, k)), fam_end)
    return [ctx.Person(-1, "other", "family")] + [p for p in people if p.kind != "self" or own or p.index >= fam_end]


def _after_sentence(d: Discourse, people: list[ctx.Person], found: list[Mention]) -> None:
    """What the next sentence may inherit: whether the one before spoke of another person's health, and the
    experiencer it ended on ("I'm so worried about him.")."""
    d.prev_other_health = bool(d.prev_other) and any(m.subject == Subject.OTHER for m in found)
    tail = [p for p in people if p.kind in ("self", "other", "owner")]
    d.prev_tail = tail[-1].relation or "other person" if tail and tail[-1].kind != "self" else ""


def _close_turn(d: Discourse, state: TurnState) -> None:
    """What the next turn may inherit: the other person the answer was still about, and the one it ended on when the
    turn was about their health ("my brother was in the hospital")."""
    state.carry_out = d.carry
    if d.prev_tail and (_HEALTH_EVENT.search(state.low) or any(m.subject == Subject.OTHER for m in state.mentions)):
        state.tail_other = d.prev_tail
