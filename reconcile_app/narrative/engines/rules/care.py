"""Care activities, programs, procedures and vaccines: named by the terminology, by their form, or by what was done."""
from __future__ import annotations

import re

from reconcile_app.narrative.types import Assertion, MemoryCategory
from reconcile_app.terminology.concepts import vaccine_names_by_disease

from .. import context as ctx
from ..cues import cue_pattern, cue_text, cue_words
from .condition import _STOP_CONDITION
from .sentences import _event_time
from .state import Mention, SentenceScope


_PROC_NOUN = cue_pattern("proc_noun")
_VACCINE_NAMES = cue_text("vaccine_names")
_VACCINE_LIST = cue_pattern("vaccine_list")
_VACCINE_AFTER_NOUN = cue_pattern("vaccine_after_noun")  # "a jab against shingles", "that vaccine, the pneumococcal"
_VACCINE_CANON = vaccine_names_by_disease()  # "shingles" -> "zoster vaccine" (terminology/data/immunizations.json)
_VACCINE_ONE = cue_pattern("vaccine_one_anaphor")  # "the shingles one": 'one' stands for a shot noun said before
_ONE_ANTECEDENT = cue_pattern("vaccine_one_antecedent")
_ONE_DEFERRED = cue_pattern("vaccine_one_deferred")  # "the shingles one, not yet": planned, not given
_REMOVAL = cue_pattern("removal")
# "had my IUD taken out", "got the stitches removed", "getting a port put in": object before the verb.
_HAD_X_DONE = cue_pattern("had_x_done")
_NOT_PROCEDURE_OBJECTS = cue_words("not_procedure_objects")
# A care program named by its form ("the heart class", "my diabetes classes", "the balance program") with a verb of
# joining, attending or leaving it: a care-plan activity even when the program's name is not in the dictionary.
_PROGRAM = cue_pattern("program")
_PROGRAM_STOP = cue_words("program_stop")
_ONGOING_TREATMENTS = cue_words("ongoing_treatments")
_PROC_PAST = cue_pattern("proc_past")
_WHERE = cue_pattern("where")


def _s_programs(s: SentenceScope) -> None:
    """A care program named by its form (a class, a group, rehab) with a verb of joining, skipping or leaving it."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    for m in _PROGRAM.finditer(sent.low):
        a, b = sent.start + m.start(2), sent.start + m.end(2)
        if any(x.category == MemoryCategory.CARE_ACTIVITY and x.start < b and a < x.end for x in out):
            continue  # the dictionary already named it ("cardiac rehab")
        tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
        res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
        verb = m.group(1).split()[0]
        action = "stopped" if verb in _PROGRAM_STOP else "skipped" if verb in ("skipped", "skipping", "missed") else \
            "started" if verb in ("started", "starting", "signed", "joined", "enrolled") else "attending"
        if verb in ("skipped", "skipping", "missed"):
            action = "skipped"
        name = m.group(2).strip()
        care = Mention(MemoryCategory.CARE_ACTIVITY, state.turn, sent, a, b, {"name": name, "detail": m.group(0), "action": action},
                       res.subject, res.relation, res.assertion, confidence=0.55, turn_ids=[state.turn.id], name=name)
        if action == "stopped" and care.assertion == Assertion.NEGATED:
            care.assertion = Assertion.AFFIRMED
        care.event_time = _event_time(state, sent)
        out.append(care)


def _s_had_done(s: SentenceScope) -> None:
    """"had my X taken out / put in": a procedure named by its object and verb."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    for m in _HAD_X_DONE.finditer(sent.low):
        obj = m.group(1).strip()
        if any(x.category == MemoryCategory.PROCEDURE for x in out) or obj.split()[-1] in _NOT_PROCEDURE_OBJECTS \
                or obj.split()[0] in _STOP_CONDITION:
            break
        tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(1)), 0)
        res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
        verb = m.group(2)
        name = f"{'insertion' if verb in ('put in', 'placed', 'inserted', 'implanted') else 'replacement' if verb in ('replaced', 'swapped out', 'changed out') else 'removal'} of {obj}"
        mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                          {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion,
                          confidence=0.55, turn_ids=[state.turn.id], name=name)
        mention.event_time = _event_time(state, sent)
        out.append(mention)
        break


def _s_procedure_noun(s: SentenceScope) -> None:
    """A procedure named by its generic noun (surgery, scan, biopsy) when nothing named it yet."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    if not any(x.category == MemoryCategory.PROCEDURE for x in out):
        for m in _PROC_NOUN.finditer(sent.low):
            name = m.group(0).strip()
            if name.split()[0] in _STOP_CONDITION or any(x.start <= sent.start + m.start() < x.end for x in out if x.category == MemoryCategory.IMMUNIZATION):
                continue
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": name, "term": name}, res.subject, res.relation, res.assertion, confidence=0.5,
                              turn_ids=[state.turn.id], name=name)
            where = _WHERE.search(sent.low)
            if where:
                mention.attributes["where"] = where.group(1).strip()
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            break


def _s_vaccine_list(s: SentenceScope) -> None:
    """Vaccines named by disease, listed before the shot noun ("flu and covid shots") or after it ("a jab against shingles"),
    one memory each."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    for m in [*_VACCINE_LIST.finditer(sent.low), *_VACCINE_AFTER_NOUN.finditer(sent.low)]:
        for part in re.findall(_VACCINE_NAMES, m.group(1)):
            name = _VACCINE_CANON.get(part.split()[0], part) if part else part
            if any(x.category == MemoryCategory.IMMUNIZATION and x.name == name for x in out):
                continue
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            mention = Mention(MemoryCategory.IMMUNIZATION, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                              {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion, confidence=0.6,
                              turn_ids=[state.turn.id], name=name)
            where = _WHERE.search(sent.low)
            if where:
                mention.attributes["where"] = where.group(1).strip()
            mention.event_time = _event_time(state, sent)
            named = sent.start + m.start(1)  # the disease word itself names the vaccine, not an illness
            out[:] = [x for x in out if not ((x.category == MemoryCategory.CONDITION and (x.name in ("influenza", "covid-19", "herpes zoster", "pneumonia")
                                                                                   or x.start == named)
                                           or x.category == MemoryCategory.IMMUNIZATION and x.name == "vaccine")
                                          and x.start >= sent.start + m.start() and x.end <= sent.start + m.end())]
            out.append(mention)


def _shot_antecedent(before: str) -> bool:
    """The nearest countable noun a following 'one' can stand for is a shot noun (not a test, case or infection)."""
    nouns = list(_ONE_ANTECEDENT.finditer(before[-300:]))
    return bool(nouns) and nouns[-1].group("shot") is not None


def _s_vaccine_one(s: SentenceScope) -> None:
    """A vaccine named by its disease with 'one' for a shot noun said before ("the shingles one", after a question
    about jabs): an immunization, and the disease word is no illness of the patient's."""
    state, sent, out = s.state, s.sent, s.out
    earlier = state.context_text[len(state.low) + 1 :]  # the turns before this one, oldest first
    for m in _VACCINE_ONE.finditer(sent.low):
        if not _shot_antecedent(earlier + " " + state.low[: sent.start + m.start()]):
            continue
        part = m.group(1)
        name = _VACCINE_CANON.get(part.split()[0], part)
        a, b = sent.start + m.start(), sent.start + m.end()
        if any(x.category == MemoryCategory.IMMUNIZATION and x.name == name for x in out):
            continue
        tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(1)), 0)
        res = ctx.assess(s.words, tok, tok + 1, triggers=s.triggers, people=s.people)
        mention = Mention(MemoryCategory.IMMUNIZATION, state.turn, sent, a, b, {"name": name, "term": m.group(0)},
                          res.subject, res.relation, res.assertion, confidence=0.55, turn_ids=[state.turn.id], name=name)
        if mention.assertion == Assertion.AFFIRMED and _ONE_DEFERRED.search(sent.low[m.end() : m.end() + 60]):
            mention.assertion = Assertion.HYPOTHETICAL  # put off for later: no shot was given
        mention.event_time = _event_time(state, sent)
        out[:] = [x for x in out if not (x.category == MemoryCategory.CONDITION and x.start < b and a < x.end)]
        out.append(mention)


def _s_removal(s: SentenceScope) -> None:
    """Something removed (polyps, a mole, a cyst): a procedure."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    for m in _REMOVAL.finditer(sent.low):
        if any(x.category == MemoryCategory.PROCEDURE for x in out):
            break
        tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start()), 0)
        res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
        name = f"removal of {m.group(2)}"
        mention = Mention(MemoryCategory.PROCEDURE, state.turn, sent, sent.start + m.start(), sent.start + m.end(),
                          {"name": name, "term": m.group(0)}, res.subject, res.relation, res.assertion,
                          confidence=0.6, turn_ids=[state.turn.id], name=name)
        mention.event_time = _event_time(state, sent)
        out.append(mention)


_CARE_VERBS = cue_words("care_verbs")


def _care_action(sentence: str) -> str:
    if re.search(r"\b(quit|stopped|stop|gave up|give up|giving up|haven't|havent|not using|don't use|dont use|cant stand|"
                 r"can't stand|fell off|off the|cheating on|skipping|skipped|dropped out|ditched|no longer|abandoned|"
                 r"discontinued|not following|stopped following|not sticking|slacking|slacked)\b", sentence):
        return "stopped"
    if re.search(r"\b(done with|finished with|through with|over with)\b", sentence):
        return "stopped"
    if re.search(r"\b(started|start|began|signed up|joined|bought|new)\b", sentence):
        return "started"
    return ""
