"""Reference across sentences and turns: a drug named by class or pronoun, answers to the coach, reasons and effects."""
from __future__ import annotations

import re
from typing import Any

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import Assertion, MemoryCategory, Subject
from reconcile_app.terminology.lexicon import Lexicon, _record_names
from reconcile_app.terminology.vocabulary import load_vocabulary

from .. import context as ctx
from ..clauses import Sentence
from ..cues import cue_pattern, cue_rules
from .care import _care_action
from .medication import _ANTIHISTAMINE, _PAST_LAPSE_ENDED, _nearest_action
from .sentences import _event_time, _sentence_time
from .state import CLINICAL, Mention, TurnState, _patient_neighbours


_OTHERS_SUPPLY = cue_pattern("others_supply")
_ERRAND_FOR_OTHER = cue_pattern("errand_for_other")  # "collecting Grandpa's order" (medication_frames.json)
_OWN_INTAKE = cue_pattern("own_intake")
_OFFER_REPORTED = cue_pattern("offer_reported")  # "the nurse asked whether we would like a booster" (extractor.json)
_OFFER_ACCEPTED = cue_pattern("offer_accepted")  # "I told her yes"
_FIRST_PERSON_INTAKE = cue_pattern("first_person_intake")
_POSSESSIVE_SUPPLY = cue_pattern("possessive_supply")  # "I take his" (medication_frames.json)


_CAUSAL = cue_pattern("causal")
_BACKREF_Q = cue_pattern("backref_q")


def _compatible(unresolved_class: str, entry_class: str) -> bool:
    """A drug of entry_class can be what a mention of unresolved_class ("my blood pressure pill") refers to."""
    if not unresolved_class or unresolved_class == entry_class:
        return True
    vocab = load_vocabulary()
    family, member = vocab.class_named(unresolved_class), vocab.class_named(entry_class)
    return family is not None and member is not None and vocab.is_a(member.id, family.id)


def _record_class_drugs(record: ClinicalRecord | None, lex: Lexicon, lay_class: str) -> list[tuple[str, Any]]:
    if record is None or not lay_class:
        return []
    out = []
    try:
        meds = record.active_medications
    except Exception:
        return []
    for med in meds:
        names = _record_names(med.display or "", "drug", lex)
        canonical = names[0][1] if names else _head(med.display)
        cls = lex.class_of(canonical)
        if _compatible(lay_class, cls) and cls:
            out.append((canonical, med))
    return out


def _head(display: str) -> str:
    words = re.findall(r"[a-z]+", display.lower())
    return words[0] if words else ""


def _burst_links(states: list[TurnState]) -> None:
    """Consecutive patient messages are one utterance split by the send button: a message with nothing
    clinical of its own ("ugh", "anyway the doc said to call") joins the clinical memories of its neighbour."""
    bursts: list[list[TurnState]] = []
    for state in states:
        if state.turn.speaker == "patient" and bursts and bursts[-1][-1].turn.speaker == "patient" \
                and states.index(bursts[-1][-1]) == states.index(state) - 1:
            bursts[-1].append(state)
        elif state.turn.speaker == "patient":
            bursts.append([state])
    for burst in bursts:
        if len(burst) < 2:
            continue
        for k, state in enumerate(burst):
            if any(m.category != MemoryCategory.LIFESTYLE for m in state.mentions):
                continue
            for other in [burst[j] for j in range(k - 1, -1, -1)] + burst[k + 1 :]:
                targets = [m for m in other.mentions if m.category in CLINICAL | {"care_activity"}
                           and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
                if targets:
                    for m in targets:
                        if state.turn.id not in m.turn_ids:
                            m.turn_ids.append(state.turn.id)
                    break


def _resolve_medication(mention: Mention, state: TurnState, states: list[TurnState], i: int,
                        coach_before: TurnState | None, record: ClinicalRecord | None, lex: Lexicon) -> None:
    cls = mention.attributes.get("drug_class", "")
    # 1. a named drug earlier in this turn, then in the neighbouring patient turns: a pronoun ("stopped it")
    #    looks back first, a noun ("my pen") looks at the answer that follows first.
    same_turn = [m for m in state.mentions if m.start < mention.start]
    anaphora = bool(mention.attributes.get("anaphora"))
    if anaphora and not any(m.category == MemoryCategory.MEDICATION and not m.unresolved for m in same_turn) \
            and _from_coach_question(mention, coach_before, cls, lex):
        return  # "How is the sertraline?" "Cutting it in half.": an answer's "it" is the question's topic
    neighbours = (_patient_neighbours(states, i, 2, 0) + _patient_neighbours(states, i, 0, 2)
                  if anaphora else _patient_neighbours(states, i, 2, 2))
    # within the turn, the nearest drug before the reference first (Centering: the most recent compatible antecedent)
    pools: list[tuple[TurnState, list[Mention]]] = [(state, sorted(same_turn, key=lambda m: -m.start))] + \
        [(s, s.mentions) for s in neighbours]
    for other_state, mentions in pools:
        for other in mentions:
            if other is mention or other.category != MemoryCategory.MEDICATION or other.unresolved:
                continue
            if other.subject != Subject.PATIENT or not _compatible(cls, other.attributes.get("drug_class", "")):
                continue
            if mention.attributes.get("anaphora") and other.attributes.get("drug") in _ANTIHISTAMINE:
                continue
            _merge(mention, other, other_state)
            return
    # 2. the coach's question named it ("Are you still taking your metformin?")
    if _from_coach_question(mention, coach_before, cls, lex):
        return
    # 2b. "it" with no drug in the turns around: the drug last named in the conversation a few turns back is still
    #     its topic ("Did you ask about the Zoloft?" ... "How are you handling it?" "Cutting it in half.")
    if mention.attributes.get("anaphora"):
        for earlier in reversed(states[max(0, i - _TOPIC_TURNS) : i]):
            if _from_coach_question(mention, earlier, cls, lex):
                return
    # 2c. "it" in answer to a question that named only a class or a purpose ("Still on the blood thinner?" "Quit it"):
    #     the pronoun takes that class, and the record says which order of the class is meant (step 3)
    if mention.attributes.get("anaphora"):
        cls = _class_from_turns(mention, states[max(0, i - _TOPIC_TURNS) : i], cls) or cls
    # 3. the record holds exactly one active drug of that class, or in that dosage form ("the strips", "my patch")
    candidates = _record_class_drugs(record, lex, cls) or _record_form_drugs(record, lex, mention.attributes.get("reference", ""))
    if len({c for c, _ in candidates}) == 1:
        canonical, med = candidates[0]
        mention.attributes["drug"] = canonical
        mention.attributes["display"] = med.display
        if med.primary_coding:
            mention.attributes["rxnorm_hint"] = med.primary_coding.code
        mention.attributes["record_ref"] = f"{med.resource_type}/{med.id}"
        mention.name = canonical
        mention.unresolved = False
        mention.confidence = min(mention.confidence, 0.6)


def _class_from_turns(mention: Mention, earlier: list[TurnState], cls: str) -> str:
    """The class or purpose ("the water pill", "your bone medicine") last named in the turns before, nearest first,
    adopted by a pronoun whose own class is unknown or broader (Centering theory: the most recent compatible
    antecedent; Grosz, Joshi & Weinstein 1995). Each turn is read whole, the last class hit of it first."""
    for turn in reversed(earlier):
        named = [hit.best for sent in turn.sentences for hit in getattr(sent, "hits", [])
                 if hit.best.kind == "drug_class" and hit.best.canonical and _compatible(cls, hit.best.canonical)]
        if any(hit.best.kind == "drug" for sent in turn.sentences for hit in getattr(sent, "hits", [])):
            return ""  # a turn naming a drug is the antecedent (steps 1-2b): its class is no better a guess
        if named:
            mention.attributes["drug_class"] = named[-1].canonical
            mention.name = named[-1].canonical
            if turn.turn.id not in mention.turn_ids:
                mention.turn_ids.append(turn.turn.id)
            return named[-1].canonical
    return ""


_TOPIC_TURNS = 4  # how far back a drug named by either speaker stays the topic a bare "it" refers to


def _from_coach_question(mention: Mention, coach_before: TurnState | None, cls: str, lex: Lexicon) -> bool:
    """The drug a turn before names (the coach's question just before, or an earlier turn of either speaker), when
    it names one of a compatible class (the last one named)."""
    if coach_before is None:
        return False
    drugs = [hit.best for sent in coach_before.sentences for hit in getattr(sent, "hits", [])
             if hit.best.kind == "drug" and _compatible(cls, hit.best.drug_class or lex.class_of(hit.best.canonical))]
    if not drugs:
        return False
    best = drugs[-1] if mention.attributes.get("anaphora") else drugs[0]
    mention.attributes["drug"] = best.canonical
    mention.attributes.setdefault("drug_class", best.drug_class)
    mention.name = best.canonical
    mention.unresolved = False
    mention.turn_ids.append(coach_before.turn.id)
    return True


_FORM_REFERENCE = [(frozenset(r["words"].split()), re.compile(r["display"]) if r["display"] else None, r["class"])
                   for r in cue_rules("form_reference")]


def _record_form_drugs(record: ClinicalRecord | None, lex: Lexicon, word: str) -> list[tuple[str, Any]]:
    """The record's active orders in the dosage form a word names ("strips": a sublingual film), or of the class a
    form implies ("boluses": insulin)."""
    rule = next(((display, cls) for words, display, cls in _FORM_REFERENCE if word in words), None) if word else None
    if rule is None or record is None:
        return []
    display, cls = rule
    if cls:
        label = load_vocabulary().classes[cls].label if cls in load_vocabulary().classes else ""
        return _record_class_drugs(record, lex, label)
    try:
        meds = record.active_medications
    except Exception:
        return []
    out = []
    for med in meds:
        if display is not None and display.search((med.display or "").lower()):
            names = _record_names(med.display or "", "drug", lex)
            out.append((names[0][1] if names else _head(med.display), med))
    return out


def _merge(unresolved: Mention, named: Mention, named_state: TurnState) -> None:
    """The unresolved action takes the drug; the named mention takes the action if it had none."""
    for key in ("drug", "drug_class", "display", "rxnorm_hint", "record_ref"):
        if named.attributes.get(key):
            unresolved.attributes[key] = named.attributes[key]
    unresolved.name = named.name
    unresolved.unresolved = False
    unresolved.confidence = max(unresolved.confidence, 0.6)
    if named.turn.id not in unresolved.turn_ids:
        unresolved.turn_ids.append(named.turn.id)
    if named.attributes.get("action") in (None, "taking") and unresolved.attributes.get("action") not in (None, "taking"):
        # "it's the water pill. so I quit it": the named mention carries the action stated about it
        named.attributes["action"] = unresolved.attributes["action"]
        if unresolved.attributes.get("dose_change"):
            named.attributes["dose_change"] = unresolved.attributes["dose_change"]
        if named.event_time is None:
            named.event_time = unresolved.event_time
    if unresolved.turn.id not in named.turn_ids:
        named.turn_ids.append(unresolved.turn.id)
    if named.turn.id == unresolved.turn.id:
        unresolved.state = "duplicate"  # same turn: the named mention already carries it


_Q_ACTION = [(re.compile(r["pattern"]), r["action"]) for r in cue_rules("q_action")]


def _answer_fills_action(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """A short answer naming a drug takes the action from the question or the previous patient turn."""
    meds = [m for m in state.mentions if m.category == MemoryCategory.MEDICATION and not m.unresolved]
    if not meds or coach_before is None:
        return
    if len(state.low.split()) > 25:
        return
    qlow = coach_before.low
    for m in meds:
        if m.attributes.get("action") not in ("taking", None):
            continue
        for rx, action in _Q_ACTION:
            if rx.search(qlow) and re.search(r"\b(which|what|the one|that one)\b", qlow):
                m.attributes["action"] = action
                m.turn_ids.append(coach_before.turn.id)
                break


_BARE_ACTION = cue_pattern("bare_action")
_DISCUSSION_Q = cue_pattern("discussion_question")  # "did your doctor bring up X?" (medication_frames.json)
_INTAKE_Q = cue_pattern("intake_question")  # "still on the X?"
# a polar "no" answer to a question about continued use (Sacks, Schegloff & Jefferson 1974: adjacency pairs)
_BARE_NO = re.compile(r"\W*(?:no|nope|nah|naw|not anymore|not really)\b(?!\s+(?:problems?|issues?|trouble|side effects?|changes?))")
_STILL_Q = re.compile(r"\b(?:still|keeping up with|continuing)\b")


def _answer_about_coach_entity(state: TurnState, coach_before: TurnState | None, lex: Lexicon) -> None:
    """"Are you still using the CPAP?" - "only a couple hours a night": the answer is about the question's subject."""
    if coach_before is None or "?" not in coach_before.low:
        return
    if any(m.category in (MemoryCategory.MEDICATION, MemoryCategory.CARE_ACTIVITY) for m in state.mentions):
        return
    entities = [h for sent in coach_before.sentences for h in getattr(sent, "hits", [])
                if h.best.kind in ("drug", "care") or (h.best.kind == "drug_class" and h.best.canonical)]
    if len(entities) != 1 or not state.sentences:
        return
    sent = state.sentences[0]
    m = _BARE_ACTION.search(sent.low)
    if m is None and not re.search(r"\b(it|them|that one|those|the one|yes|yeah|ya|yep|no|nope)\b", sent.low):
        return
    entry = entities[0].best
    words = [t for t, _, _ in sent.tokens]
    triggers = ctx.find_assertion_triggers(words)
    res = ctx.assess(words, 0, 1, triggers=triggers, people=ctx.find_people(words))
    if res.subject != Subject.PATIENT:
        return
    if entry.kind == "care":
        action = _care_action(sent.low)
        if res.negation_at >= 0 or re.search(r"\b(only|barely|hardly|rarely|not much|keep pulling)\b", sent.low):
            action = action or "partial"
        attrs: dict[str, Any] = {"name": entry.canonical, "detail": entities[0].term, "from_question": coach_before.turn.id}
        if action:
            attrs["action"] = action
        category = MemoryCategory.CARE_ACTIVITY
    else:
        found = None if _PAST_LAPSE_ENDED.search(sent.low) else _nearest_action(_own_clause(sent.low, words), "")
        if found is None and m is None and _about_a_discussion(coach_before.low):
            return  # "Did the doctor bring up X?" "Yeah she did": assent to a talk about X, not a statement of taking it
        action = found[0] if found else "taking"  # "used to skip them, not anymore": taken now
        if (res.negation_at >= 0 or (_BARE_NO.match(sent.low) and _STILL_Q.search(coach_before.low))) \
                and action in ("taking", "took_once", None) and not _PAST_LAPSE_ENDED.search(sent.low):
            action = "stopped"  # "Still on the water pill?" "Nope.": a polar answer denying continued use
        attrs = {"drug": entry.canonical if entry.kind == "drug" else "", "drug_class": entry.drug_class or
                 (entry.canonical if entry.kind == "drug_class" else lex.class_of(entry.canonical)),
                 "action": action or "taking", "from_question": coach_before.turn.id}
        if found and found[1]:
            attrs["dose_change"] = found[1]
        category = MemoryCategory.MEDICATION
    assertion = Assertion.HYPOTHETICAL if res.assertion == Assertion.HYPOTHETICAL else Assertion.AFFIRMED
    mention = Mention(category, state.turn, sent, sent.start, sent.end, attrs, Subject.PATIENT, "", assertion,
                      confidence=0.45, turn_ids=[state.turn.id, coach_before.turn.id],
                      name=attrs.get("drug") or attrs.get("name") or attrs.get("drug_class", ""))
    mention.event_time = _event_time(state, sent)
    state.mentions.append(mention)


def _about_a_discussion(question: str) -> bool:
    """The coach asks whether a medicine was talked about or planned, not whether the patient takes it (a polar
    question's answer confirms the question's own proposition: Raymond 2003)."""
    return bool(_DISCUSSION_Q.search(question)) and not _INTAKE_Q.search(question)


def _own_clause(low: str, words: list[str]) -> str:
    """The clause of an answer about the patient's own use when it also speaks of someone else ("my husband quit his,
    but I'm still taking mine"): the first clause with a first-person subject; the whole answer otherwise."""
    if not any(p.kind in ("other", "owner") for p in ctx.find_people(words)):
        return low
    clauses = re.split(r"[,;]|\bbut\b|\bwhile\b|\bwhereas\b", low)
    return next((c for c in clauses if re.search(r"\b(?:i|i'm|im|i've|ive|i'd|me|myself)\b", c)), "")


def _reason_links(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """Symptoms reported right before a change ("so I cut it in half") or right after it, in answer to the
    coach's follow-up, stay linked to the change as its reason or its effects."""
    changes = [m for m in state.mentions if m.category in (MemoryCategory.MEDICATION, MemoryCategory.CARE_ACTIVITY)
               and m.attributes.get("action") in ("stopped", "changed_dose", "skipped", "started", "resumed")
               and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
    if not changes:
        return
    prev = _patient_neighbours(states, i, 1, 0)
    if prev and states[i - 1] is not prev[0] and (coach_before is not None and "?" in coach_before.low):
        before = prev[0]
        causal = _CAUSAL.search(state.low) or _BACKREF_Q.search(coach_before.low)
        symptoms = [m for m in before.mentions if m.category in (MemoryCategory.SYMPTOM, MemoryCategory.CONDITION)
                    and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
        silent = not any(m.category in CLINICAL for m in before.mentions)
        if (symptoms or silent) and causal:
            for change in changes:
                if symptoms:
                    change.attributes.setdefault("reason", ", ".join(sorted({s.name for s in symptoms})))
                if before.turn.id not in change.turn_ids:
                    change.turn_ids.append(before.turn.id)
            for s in symptoms:
                if state.turn.id not in s.turn_ids:
                    s.turn_ids.append(state.turn.id)
    nxt = _patient_neighbours(states, i, 0, 1)
    if nxt:
        after = nxt[0]
        j = states.index(after)
        question = states[j - 1] if j - 1 > i and states[j - 1].turn.speaker != "patient" else None
        follow_on = j == i + 1  # the patient's next message straight after, no coach turn between
        if not follow_on and (question is None or "?" not in question.low):
            return
        effects = [m for m in after.mentions if m.category in (MemoryCategory.SYMPTOM, MemoryCategory.MEASUREMENT)
                   and m.subject == Subject.PATIENT and m.assertion == Assertion.AFFIRMED]
        if not effects or any(m.category == MemoryCategory.MEDICATION for m in after.mentions):
            return
        for change in changes:
            change.attributes.setdefault("effects", ", ".join(sorted({e.name for e in effects})))
            if after.turn.id not in change.turn_ids:
                change.turn_ids.append(after.turn.id)
        for e in effects:
            if state.turn.id not in e.turn_ids:
                e.turn_ids.append(state.turn.id)


_SCHEDULE_FOLLOW_ON = cue_pattern("schedule_follow_on")  # "I take it at night now" (extractor.json)
_SCHEDULE_WORDS = cue_pattern("schedule_follow_on_time")


def _schedule_follow_ons(state: TurnState) -> None:
    """A sentence that says when or how often the patient takes "it", right after a medicine is named and naming
    none itself, belongs to that medicine's statement: its quote runs on through it, so its schedule reaches the
    comparison with the order (the pronoun takes the nearest medicine before it, at most two sentences back)."""
    for k, sent in enumerate(state.sentences):
        if not _SCHEDULE_FOLLOW_ON.search(sent.low) or not _SCHEDULE_WORDS.search(sent.low):
            continue
        own = {m.name for m in state.mentions if m.sentence is sent and m.category == MemoryCategory.MEDICATION}
        earlier = [m for m in state.mentions if m.category == MemoryCategory.MEDICATION and not m.unresolved
                   and m.sentence.end <= sent.start and m.sentence in state.sentences[max(0, k - 3) : k]]
        if not earlier:
            continue
        last = max(earlier, key=lambda m: m.start)
        named = [m for m in earlier if m.sentence is last.sentence]
        if len({m.name for m in named}) != 1 or last.subject != Subject.PATIENT or last.assertion != Assertion.AFFIRMED \
                or own - {last.name}:
            continue  # two medicines named together, or another one here: the pronoun could be either
        for m in named:
            m.quote_end = max(m.quote_end, sent.end)


_FOLLOW_UP_Q = cue_pattern("follow_up_q")
_ANSWER = cue_pattern("answer")


def _continuations(state: TurnState, states: list[TurnState], i: int, coach_before: TurnState | None) -> None:
    """An answer to a follow-up question ("has that happened before?", "does your doctor know?") belongs to the
    previous patient turn's clinical memories: it joins their turns, and lends them its time if they had none."""
    if coach_before is None:
        return
    follow_up = _FOLLOW_UP_Q.search(coach_before.low) or (
        "?" in coach_before.low and re.search(r"\b(that|it|this|those|they|them)\b", coach_before.low))
    if not follow_up and "?" not in coach_before.low:
        return
    prev = _patient_neighbours(states, i, 1, 0)
    if not prev:
        return
    before = prev[0]
    own_clinical = [m for m in state.mentions if m.category in CLINICAL]
    earlier = [m for m in before.mentions if m.category in CLINICAL and m.subject == Subject.PATIENT
               and m.assertion == Assertion.AFFIRMED]
    if own_clinical and not earlier:
        # the previous turn set up what this one explains ("had to stop twice" -> "chest got tight")
        if not any(m.category != MemoryCategory.LIFESTYLE for m in before.mentions) and len(before.low.split()) <= 40:
            for m in own_clinical:
                if m.subject == Subject.PATIENT and before.turn.id not in m.turn_ids:
                    m.turn_ids.append(before.turn.id)
        return
    if own_clinical or not earlier or not follow_up:
        return
    when = next((t for s in state.sentences if (t := _sentence_time(state, s))), None)
    if when is None and not _ANSWER.search(state.low) and len(state.low.split()) > 20:
        return
    for m in earlier:
        if state.turn.id not in m.turn_ids:
            m.turn_ids.append(state.turn.id)
        if m.event_time is None and when is not None:
            m.event_time = when
            m.attributes.setdefault("time_from_turn", state.turn.id)


def _borrowed_from_other(state: TurnState, states: list[TurnState], i: int) -> None:
    """"Helen has Ambien from her doctor. I've been taking half of one of hers": the patient's use of another person's
    medicine, named for its owner a sentence or a turn before, is the patient's fact (its source someone else)."""
    for sent in state.sentences:
        if not _FIRST_PERSON_INTAKE.search(sent.low) or not (_OTHERS_SUPPLY.search(sent.low) or _POSSESSIVE_SUPPLY.search(sent.low)):
            continue
        if any(m.category == MemoryCategory.MEDICATION and m.sentence is sent and m.subject == Subject.PATIENT
               and not m.unresolved for m in state.mentions):
            continue  # the sentence names the patient's own use already
        owned = _owned_medicine(state, states, i, sent)
        if owned is None:
            continue
        state.mentions[:] = [m for m in state.mentions if not (m.sentence is sent and m.category == MemoryCategory.MEDICATION
                                                                 and m.unresolved)]
        found = _nearest_action(sent.low, "")
        attrs: dict[str, Any] = {"drug": owned.attributes.get("drug", ""), "drug_class": owned.attributes.get("drug_class", ""),
                                 "action": "taking" if found is None or found[0] in ("took_once", None) else found[0],
                                 "source": "someone_else", "owner": owned.relation or owned.attributes.get("owner") or "other person"}
        if found and found[1]:
            attrs["dose_change"] = found[1]
        mention = Mention(MemoryCategory.MEDICATION, state.turn, sent, sent.start, sent.end, attrs, Subject.PATIENT, "",
                          Assertion.AFFIRMED, confidence=0.55, turn_ids=list(dict.fromkeys([state.turn.id, owned.turn.id])),
                          name=attrs["drug"] or attrs["drug_class"])
        mention.event_time = _event_time(state, sent)
        state.mentions.append(mention)


def _owned_medicine(state: TurnState, states: list[TurnState], i: int, sent: Sentence) -> Mention | None:
    """The latest medicine said to be another person's before the sentence: in this turn, else the patient's turn before."""
    earlier = [m for m in state.mentions if m.category == MemoryCategory.MEDICATION and m.start < sent.start]
    before = _patient_neighbours(states, i, 1, 0)
    pool = earlier[::-1] + (before[0].mentions[::-1] if before else [])
    return next((m for m in pool if m.category == MemoryCategory.MEDICATION and not m.unresolved
                 and (m.subject == Subject.OTHER or m.attributes.get("owner"))), None)


def _errands_for_others(state: TurnState) -> None:
    """"Collected Grandpa's order at the drugstore. The lisinopril was on back order.": medicines handled for their
    owner (collected, ordered, dropped off) are the owner's, in the errand's sentence and the sentences after it, until
    one says the patient's own use ("I take the same one", "mine too")."""
    owner = ""
    for sent in state.sentences:
        errand = _ERRAND_FOR_OTHER.search(sent.low)
        if errand is not None:
            owner = errand.group("owner") or errand.group("owner2") or "other person"
        if not owner:
            continue
        if _OWN_INTAKE.search(sent.low):
            owner = ""
            continue
        for mention in state.mentions:
            if mention.sentence is sent and mention.category == MemoryCategory.MEDICATION and mention.subject == Subject.PATIENT:
                mention.subject, mention.relation = Subject.OTHER, owner
                if mention.attributes.get("source") == "someone_else":
                    mention.attributes.pop("source")  # not borrowed: collected for its owner
                mention.attributes["owner"] = owner


def _accepted_offers(state: TurnState) -> None:
    """"The nurse asked whether I would like a tetanus booster. I told her yes.": a vaccine offered in a reported question and accepted
    in the same or the next sentence was given; the question's 'if' made it read as hypothetical (Davidson 1984)."""
    for k, sent in enumerate(state.sentences):
        offer = _OFFER_REPORTED.search(sent.low)
        if offer is None:
            continue
        said = sent.low[offer.end():] + " " + (state.sentences[k + 1].low if k + 1 < len(state.sentences) else "")
        if not _OFFER_ACCEPTED.search(said):
            continue
        for mention in state.mentions:
            if mention.sentence is sent and mention.category == MemoryCategory.IMMUNIZATION \
                    and mention.assertion == Assertion.HYPOTHETICAL and mention.subject == Subject.PATIENT:
                mention.assertion = Assertion.AFFIRMED

