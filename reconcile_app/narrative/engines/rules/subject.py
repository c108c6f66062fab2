"""Who a sentence is about: names, people asked about, quoted speakers, family history (subject and assertion cues)."""
from __future__ import annotations

import re

from .. import context as ctx
from ..clauses import Sentence
from ..cues import cue_pattern, cue_words
from .state import TurnState


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


def _asked_about_other(previous: list[TurnState]) -> str:
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
        if name and name not in _CAPITAL_NOT_NAME and name not in ctx.CLINICIANS and name not in _NOT_A_PERSON:
            return "named person"
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


def _carry_after(people: list, carry: str) -> str:
    """The experiencer a following fragment inherits: the last other person, unless the patient spoke of themself."""
    if not people:
        return carry
    last = [p for p in people if p.kind in ("self", "other", "owner")]
    if not last:
        return carry
    if any(p.kind == "self" for p in last):
        return ""
    return last[-1].relation or carry


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
