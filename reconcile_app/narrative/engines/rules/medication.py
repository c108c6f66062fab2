"""Medication mentions: the action taken on a drug, its dose, frequency and source, generic and unlisted medicines."""
from __future__ import annotations

import re
from typing import Any

from reconcile_app.narrative.types import Assertion, MemoryCategory, Subject, TurnInput
from reconcile_app.terminology.lexicon import STOPWORDS, Entry, Hit, Lexicon

from .. import context as ctx
from ..clauses import Sentence
from ..cues import cue_pattern, cue_rules, cue_words
from .sentences import _clause_around, _event_time
from .state import Mention, SentenceScope, TurnState


# ---- medication actions ------------------------------------------------------------------------

_ACTION_RX = [(re.compile(r["pattern"]), r["action"], r["dose_change"]) for r in cue_rules("action_rx")] + [
    (cue_pattern("stop_idiom"), "stopped", ""),  # "fired it", "a pink slip", "a drug holiday" (medication_frames.json)
    (cue_pattern("halving"), "changed_dose", "half"),
    (cue_pattern("extra_dose"), "changed_dose", "more"),  # "took an extra lithium" (medication_frames.json)
    (cue_pattern("supply_stretch"), "changed_dose", "less")]  # "stretching my prescription till payday"
_NEGATED_STOP = cue_pattern("negated_stop")
_ACTIVITY_STOP = cue_pattern("activity_stop")
_PAST_LAPSE_ENDED = cue_pattern("past_lapse_ended")
_CONTAINER_NOUN = cue_words("container_noun")
_CONSUMER_PRODUCT = cue_words("consumer_product")
_CULINARY_USE = cue_pattern("culinary_use")
_FOOD_HERB = cue_words("food_herb")
_SUPPLEMENT_FORM = cue_pattern("supplement_form")
_NOUN_MODIFIER_HEAD = cue_words("noun_modifier_head")
_ELIDED_DOSE = cue_pattern("elided_dose_change")
_NUMBER_INSTEAD_OF = cue_pattern("number_instead_of")
_INTAKE = cue_words("intake")
# intake verbs that speak of a medicine on their own ("doing", "been", "had" also speak of concerts and routes)
_NEAR_MATCH_INTAKE = _INTAKE - {"doing", "done", "been", "had", "picked", "touched", "filled"}
_FREQUENCY = cue_pattern("frequency")
_DOSE = cue_pattern("dose")
_OTC = cue_pattern("otc")
_SOMEONE_ELSE = cue_pattern("someone_else")
_OUTSIDE = cue_pattern("outside")
_OTC_DRUGS = cue_words("otc_drugs")

_GENERIC_MED = cue_pattern("generic_med")
_PRONOUN_MED = cue_pattern("pronoun_med")
_FRONTED_PRONOUN = cue_pattern("fronted_pronoun")  # "that one I stopped" (medication_frames.json)
_HANDED_TO_ME = cue_pattern("handed_to_me")
_BORROWED_POSSESSIVE = cue_pattern("borrowed_possessive")
# a medicine carried somewhere or for someone rather than swallowed ("took his pills over to him", "back to her")
_CARRIED = re.compile(r"\s*(?:(?:over|back|down|up|out)\s+)?(?:to\s+(?:her|him|them|my|his|the|their)\b|for\s+(?:her|him|them)\b)"
                      r"|\s*(?:over|back|home)\b")
_ANTIHISTAMINE = cue_words("antihistamine")
_PRESCRIBED = cue_pattern("prescribed")
_AS_NEEDED_DRUGS = cue_words("as_needed_drugs")  # rescue inhaler, nitroglycerin, triptans... (medication_frames.json)
_AS_NEEDED_FRAME = cue_pattern("as_needed_frame")
_NEED_DENIED = cue_pattern("need_denied")
_EXPLICIT_STOP = cue_pattern("explicit_stop")
_GENERIC_WORDS = cue_words("generic_words")


def _s_generic_medications(s: SentenceScope) -> None:
    """A medicine named by its form or a pronoun ("my pen", "stopped it"), resolved later from the conversation."""
    s.out.extend(_generic_medications(s.state, s.sent, s.words, s.hits, s.triggers, s.people, s.lex, s.out))


def _s_prescribed_unlisted(s: SentenceScope) -> None:
    """A drug started by name that the terminology does not know."""
    state, sent, words, triggers, people, out = s.state, s.sent, s.words, s.triggers, s.people, s.out
    if not any(x.category == MemoryCategory.MEDICATION and not x.unresolved for x in out):
        for m in _PRESCRIBED.finditer(sent.low):
            drug = m.group(2)
            if drug in _GENERIC_WORDS or drug in ctx.SELF_WORDS:
                continue
            head = re.match(r"\s+([a-z]+)\b", sent.low[m.end(2):])
            if head and not m.group(3) and head.group(1) not in STOPWORDS and head.group(1) not in _NOUN_MODIFIER_HEAD:
                continue  # "on holiday mode", "taking the scenic route": the word modifies the noun after it
            tok = next((i for i, t in enumerate(sent.tokens) if t[1] >= m.start(2)), 0)
            res = ctx.assess(words, tok, tok + 1, triggers=triggers, people=people)
            attrs = {"drug": drug, "drug_class": "", "action": "started", "unlisted": True}
            if m.group(3):
                attrs["dose_text"] = m.group(3)
            source = _source(sent.low, drug, res, state.turn)
            if source:
                attrs["source"] = source
            mention = Mention(MemoryCategory.MEDICATION, state.turn, sent, sent.start + m.start(2), sent.start + m.end(2),
                              attrs, res.subject, res.relation, res.assertion, confidence=0.45, turn_ids=[state.turn.id],
                              name=drug)
            mention.event_time = _event_time(state, sent)
            state.candidates.append({"term": drug, "suggestion": "", "kind": "drug", "score": 0.0, "admitted": False})
            out[:] = [x for x in out if not (x.category == MemoryCategory.MEDICATION and x.unresolved)]
            out.append(mention)
            break


def _medication(mention: Mention, hit: Hit, entry: Entry, res: ctx.ContextResult, words: list[str],
                sent: Sentence, lex: Lexicon, state: TurnState, others: tuple[str, ...] = ()) -> bool:
    """A drug or class hit as a medication: the drug, the action on it, dose, frequency, source and owner.
    False when it is a bare generic class ("an inhaler") with no action: not a statement about a medication."""
    attrs = _drug_of(mention, entry, lex)
    clause = _clause_around(sent, hit.start, hit.end)
    action, dose_change = _action(clause, sent.low, hit, words, res, others)
    action, dose_change = _switched(sent.low, hit, action, dose_change)
    if _lexicon_noise(hit, entry, clause, sent.low, words, action):
        return False
    if mention.unresolved and entry.canonical in ("inhaler", "vitamin supplement", "antibiotic") and action is None:
        return False
    if res.assertion == Assertion.NEGATED and (action in ("stopped", "skipped") or _NEGATED_STOP.search(clause)):
        # "haven't taken my X", "no more X": an action, not a denial; "never stopped my X": the negation is the stop's
        mention.assertion = Assertion.AFFIRMED
    if action in ("stopped", "skipped", None) and _as_needed_unneeded(attrs, clause, sent.low):
        # "haven't had to use my rescue inhaler in weeks": an as-needed medicine not needed is control, not a stop
        action, dose_change = "taking", ""
        attrs["as_needed_use"] = "not needed lately"
        mention.assertion = Assertion.AFFIRMED
    attrs["action"] = action or "taking"
    if dose_change:
        attrs["dose_change"] = dose_change
    _dose_and_frequency(attrs, sent.low)
    if mention.subject == Subject.PATIENT and res.owner and _CARRIED.match(sent.low, hit.end):
        mention.subject, mention.relation = Subject.OTHER, res.owner  # "took my wife's Xanax to her": carried, not taken
    if mention.subject == Subject.OTHER and (_HANDED_TO_ME.search(sent.low, hit.end) or _borrowed(sent.low, hit)):
        _handed_to_patient(mention, attrs, sent.low[hit.end :])
    else:
        _source_and_owner(attrs, res, sent.low, mention.turn, state.context_text)
    mention.attributes = attrs
    mention.name = attrs["drug"] or attrs["drug_class"]
    if entry.display:
        attrs["display"] = entry.display
        if entry.code:
            attrs["rxnorm_hint"] = entry.code
    return True


def _as_needed_unneeded(attrs: dict[str, Any], clause: str, sentence: str) -> bool:
    """An as-needed medicine (by drug, class or a word like 'rescue') said not needed or not used, with no stop verb
    of its own (GINA 2024: little reliever use is asthma under control; the order stands)."""
    as_needed = attrs.get("drug") in _AS_NEEDED_DRUGS or attrs.get("drug_class") in _AS_NEEDED_DRUGS \
        or bool(_AS_NEEDED_FRAME.search(sentence))
    return as_needed and bool(_NEED_DENIED.search(clause)) and not _EXPLICIT_STOP.search(clause)


def _borrowed(low: str, hit: Hit) -> bool:
    """"I took a couple of my wife's Xanax": the patient's intake of a medicine named as another person's, unless it
    was only carried for them ("took my wife's Xanax to her", "picked up his pills")."""
    if _CARRIED.match(low, hit.end):
        return False
    return bool(_BORROWED_POSSESSIVE.search(low[: hit.start]))


def _lexicon_noise(hit: Hit, entry: Entry, clause: str, low: str, words: list[str], action: str | None) -> bool:
    """A dictionary hit that is not a medicine in its sentence: a brand name made only of function words and numbers
    ("at 10"), a near-miss spelling with nothing about taking medicine around it ("concert"), a class word modifying a
    container ("the pill box"), a kitchen herb named as food ("put garlic in the soup")."""
    terms = hit.term.lower().split()
    if entry.kind == "drug" and all(t in STOPWORDS or t.isdigit() for t in terms):
        return True
    if entry.kind == "drug" and (entry.canonical in _CONSUMER_PRODUCT or hit.term.lower() in _CONSUMER_PRODUCT):
        return True  # "hand sanitizer in every bag": hygiene, not a medicine
    if entry.detail == "near match" and not _NEAR_MATCH_INTAKE & set(words) and action not in ("stopped", "skipped", "started",
                                                                                     "resumed", "changed_dose") \
            and not _DOSE.search(low) and not _FREQUENCY.search(low):
        return True  # a word one edit from a drug name (sentences._sentence_hits) with no medicine context around it
    if entry.kind == "drug_class" and hit.tok_end < len(words) and words[hit.tok_end] in _CONTAINER_NOUN:
        return True
    return entry.canonical in _FOOD_HERB and bool(_CULINARY_USE.search(clause)) and not _SUPPLEMENT_FORM.search(clause)


def _drug_of(mention: Mention, entry: Entry, lex: Lexicon) -> dict[str, Any]:
    """The drug and its class; a class alone ("my water pill") leaves the mention to be resolved from the conversation."""
    if entry.kind == "drug":
        return {"drug": entry.canonical, "drug_class": entry.drug_class or lex.class_of(entry.canonical)}
    mention.unresolved = True
    return {"drug": "", "drug_class": entry.canonical}


def _switched(low: str, hit: Hit, action: str | None, dose_change: str) -> tuple[str | None, str]:
    """A switch between two drugs ("switched me from Lantus to Tresiba"): the one after "from" stops, the other starts."""
    if not re.search(r"\b(switch\w*|chang\w*|mov\w*|went)\b[^.!?]{0,20}\bfrom\b", low):
        return action, dose_change
    before = low[max(0, hit.start - 12) : hit.start]
    if re.search(r"\bfrom\s+(?:my |the )?$", before):
        return "stopped", ""
    if re.search(r"\bto\s+(?:my |the )?$", before):
        return "started", ""
    return action, dose_change


def _dose_and_frequency(attrs: dict[str, Any], low: str) -> None:
    """The dose and frequency the sentence states; a frequency makes a one-off intake a regular one."""
    dose = _DOSE.search(low)
    if dose:
        attrs["dose_text"] = dose.group(1)
    freq = _FREQUENCY.search(low)
    if freq:
        attrs["frequency"] = freq.group(1)
        if attrs["action"] == "took_once":
            attrs["action"] = "taking"


def _handed_to_patient(mention: Mention, attrs: dict[str, Any], after: str) -> None:
    """"she had some extra pills so she gave me a few and I've been taking one": the other person owned them,
    the patient takes them."""
    attrs["owner"] = mention.relation or "other person"
    attrs["source"] = "someone_else"
    mention.subject, mention.relation = Subject.PATIENT, ""
    if attrs["action"] == "taking" and re.search(r"\b(?:gave|giving|handed|lent)\s+me\b", after):
        attrs["action"] = "started"


def _source_and_owner(attrs: dict[str, Any], res: ctx.ContextResult, low: str, turn: TurnInput, context_text: str) -> None:
    """Where the drug came from (someone else, an outside clinician, over the counter) and whose it is."""
    source = _source(low, attrs["drug"], res, turn)
    if not source and attrs["action"] in ("started", "changed_dose") and _OUTSIDE.search(context_text):
        source = "outside_clinician"  # "she added a pill" after "I saw a specialist"
    if source:
        attrs["source"] = source
    if res.owner:
        attrs["owner"] = res.owner


def _generic_medications(state: TurnState, sent: Sentence, words: list[str], hits: list[Hit], triggers: list,
                         people: list, lex: Lexicon, found: list[Mention]) -> list[Mention]:
    """"haven't done my pen", "stopped it": a medication action whose drug comes from the conversation."""
    has_med = any(m.category == MemoryCategory.MEDICATION for m in found)
    out: list[Mention] = []
    covered = [(h.start, h.end) for h in hits]
    for rx in ((_PRONOUN_MED, _FRONTED_PRONOUN) if has_med else (_GENERIC_MED, _PRONOUN_MED, _FRONTED_PRONOUN, _ELIDED_DOSE)):
        if rx is _ELIDED_DOSE and out:
            break  # "cut it in half, 25 instead of 50": the pronoun already names the medicine
        for m in rx.finditer(sent.low):
            g: int | str = 1 if rx in (_GENERIC_MED, _FRONTED_PRONOUN) else 2
            if rx is _ELIDED_DOSE:
                g = "amt" if m.group("amt") else "amt2"
            start, end = m.start(g), m.end(g)
            if any(s <= start < e for s, e in covered):
                continue
            if rx is _PRONOUN_MED and _determiner_of_hit(sent.low, end, hits):
                continue  # "stopped those fish oil capsules": 'those' opens the named drug's phrase, not a pronoun
            tok_start = next((i for i, t in enumerate(sent.tokens) if t[1] >= start), len(words) - 1)
            pseudo = Hit(start, end, tok_start, tok_start + 1, m.group(g), (Entry("drug_class", "", "rules"),))
            res = ctx.assess(words, tok_start, tok_start + 1, triggers=triggers, people=people)
            clause = _clause_around(sent, start, end)
            action, dose_change = _action(clause, sent.low, pseudo, words, res)
            if action in (None, "taking") and rx in (_GENERIC_MED, _ELIDED_DOSE):
                continue  # "my pills" with no change is too vague to be a memory on its own
            word = m.group(g)
            cls = "injectable" if word.startswith(("pen", "shot", "inject")) else "inhaler" if word == "inhaler" else ""
            attrs: dict[str, Any] = {"drug": "", "drug_class": cls, "action": action or "taking", "reference": word}
            if rx in (_PRONOUN_MED, _FRONTED_PRONOUN, _ELIDED_DOSE):
                attrs["anaphora"] = True  # an elided object ("doing 1 a day instead of 2") resolves like "it"
            if dose_change:
                attrs["dose_change"] = dose_change
            if res.assertion == Assertion.NEGATED and (action in ("stopped", "skipped") or _NEGATED_STOP.search(clause)):
                res.assertion = Assertion.AFFIRMED
            source = _source(sent.low, "", res, state.turn)
            if source:
                attrs["source"] = source
            mention = Mention(MemoryCategory.MEDICATION, state.turn, sent, sent.start + start, sent.start + end, attrs,
                              res.subject, res.relation, res.assertion, confidence=0.5, turn_ids=[state.turn.id],
                              name=cls or word, unresolved=True)
            mention.event_time = _event_time(state, sent)
            out.append(mention)
            covered.append((start, end))
    return out


def _determiner_of_hit(low: str, end: int, hits: list[Hit]) -> bool:
    """A demonstrative ('those', 'that') directly before a drug the sentence names is that noun phrase's determiner,
    not a pronoun standing for an earlier medicine (Quirk et al. 1985, 6.40: demonstratives as determiners and as
    pronouns)."""
    gap = re.match(r"\s+", low[end:])
    at = end + (gap.end() if gap else 0)
    return any(h.start == at and h.best.kind in ("drug", "drug_class") for h in hits)


def _action(clause: str, sentence: str, hit: Hit, words: list[str], res: ctx.ContextResult,
            others: tuple[str, ...] = ()) -> tuple[str | None, str]:
    if _NEGATED_STOP.search(clause) or _PAST_LAPSE_ENDED.search(sentence):
        return "taking", ""  # "never stopped it", "haven't missed a dose", "used to skip them, not anymore": continued
    if res.negation_at >= 0 and words[res.negation_at] in ("without", "no") and 0 <= hit.tok_start - res.negation_at <= 3:
        return "stopped", ""  # "without my januvia", "no more advil"
    if res.negation_at >= 0 and re.search(r"\b(?:anymore|any more|no longer)\b", sentence) and \
            re.search(r"\b(?:have|got|use|using|on|take|taking|need)\b", sentence):
        return "stopped", ""  # "I don't even have Lantus anymore", "not on it any more"
    if res.negation_at >= 0:
        after = words[res.negation_at + 1 : res.negation_at + 4]
        if any(w in _INTAKE for w in after) or any(w in ("on", "been") for w in after):
            if re.search(r"\b(in|for|since)\b[^.!?]*\b(days?|weeks?|months?|years?|wks?)\b|\banymore\b|\bsince\b", sentence):
                return "stopped", ""
            if re.search(r"\b(today|yesterday|last night|this morning|dose|once|couple of times|few times)\b", sentence):
                return "skipped", ""
            return "stopped", ""
    numbers = _NUMBER_INSTEAD_OF.search(sentence)
    if numbers and float(numbers.group(1)) != float(numbers.group(2)):
        return "changed_dose", "more" if float(numbers.group(1)) > float(numbers.group(2)) else "less"
    instead = _INSTEAD_OF.search(sentence)
    if instead and instead.group(1) in _AMOUNT and instead.group(2) in _AMOUNT and \
            _AMOUNT[instead.group(1)] != _AMOUNT[instead.group(2)]:
        # "taking two every morning instead of one", "half a pill instead of a whole one": a self-made dose change
        return "changed_dose", "more" if _AMOUNT[instead.group(1)] > _AMOUNT[instead.group(2)] else "less"
    found = _nearest_action(clause, hit.term, others)
    if found is None and clause != sentence:
        found = _nearest_action(sentence, hit.term, others)
    return found if found is not None else (None, "")


_AMOUNT = {"half": 0.5, "one": 1, "1": 1, "a": 1, "two": 2, "2": 2, "three": 3, "3": 3, "four": 4, "4": 4, "double": 2,
           "whole": 1, "single": 1}
_INSTEAD_OF = cue_pattern("instead_of")


def _nearest_action(text: str, term: str, others: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """The action verb nearest the mention; a specific action (stopped, changed dose) beats a generic one
    ("taking", "took") unless the generic verb is much closer. A verb whose direct object is another drug of the
    sentence is that drug's, unless the mention is coordinated with it (`_object_of_other`)."""
    found = re.search(r"(?<![a-z0-9])" + re.escape(term) + r"(?![a-z0-9])", text) if term else None
    center = found.start() if found else -1
    best: tuple[float, str, str] | None = None
    for rx, action, dose_change in _ACTION_RX:
        for m in rx.finditer(text):
            if center >= 0 and center <= m.start() and m.end() <= center + len(term):
                continue  # the mention's own words ("pill" in "pill"); a frame around it ("cut the pills in half") counts
            if action == "stopped" and _ACTIVITY_STOP.match(text, m.start()):
                continue  # "stopped worrying about it", "stopped by the pharmacy": the stop is not the medicine's
            if action == "stopped" and _noun_object_elsewhere(text, m, term):
                continue  # "back to one at bedtime, no more falls in the shower": the stop's object is the falls
            if others and action != "taking" and _object_of_other(text, m.end(), term, others):
                continue  # "they had me stop the sertraline, the new one works": the stop's object is the other drug
            distance = float(abs(m.start() - center) if center >= 0 else m.start())
            if action not in ("taking", "took_once"):
                distance -= 12
            if best is None or distance < best[0]:
                best = (distance, action, dose_change)
    return None if best is None else (best[1], best[2])


_NP_STOPS = frozenset({"no more", "done with", "gave up", "give up", "giving up"})
_MED_OBJECT = cue_words("stop_object_medicine")


def _noun_object_elsewhere(text: str, m: re.Match[str], term: str) -> bool:
    """A stop said with a noun-phrase scope ('no more', 'done with', 'gave up') whose noun is neither the mention nor
    a medicine word: NegEx's 'no' negates the noun phrase after it (Chapman et al. 2001; the scope is the phrase,
    Harkema et al. 2009), so 'no more late snacks' beside a drug stops the snacks, not the drug."""
    if m.group(0) not in _NP_STOPS:
        return False
    ahead = re.split(r"[.,;:!?]", text[m.end() : m.end() + 40], maxsplit=1)[0].split()[:4]
    if not ahead:
        return False  # "the statin, no more": the phrase ends, the drug before it is the one stopped
    if term and any(w == term.lower().split()[0] for w in ahead):
        return False
    return not any(w in _MED_OBJECT for w in ahead[:2])


_OBJECT_SLOT = re.compile(r"\s+(?:(?:the|my|his|her|their|your|our|that|this|those|these|all|of|off|taking|using)\s+){0,2}")
_COORDINATED = re.compile(r"\s*(?:,\s*)?(?:and|or|&|plus|nor|as well as|along with|together with)?\s*(?:(?:the|my|his|her|their|your|"
                          r"our|that|this|those|these|also|then)\s+)*$")


def _object_of_other(text: str, verb_end: int, term: str, others: tuple[str, ...]) -> bool:
    """Whether the verb ending at verb_end takes another drug of the sentence as its direct object (after at most two
    determiners or a gerund), with the mention not coordinated with that object. A transitive verb's object slot
    holds one noun phrase (or a coordination of them); a drug outside it is not what the verb acts on (Quirk et al.
    1985, 10.2 and 13.1; the same attachment ConText's scope leaves to the clause, Harkema et al. 2009)."""
    slot = _OBJECT_SLOT.match(text, verb_end)
    at = slot.end() if slot else verb_end
    other = next((o for o in others if o and o != term.lower() and text.startswith(o, at)
                  and not text[at + len(o) : at + len(o) + 1].isalnum()), None)
    if other is None:
        return False
    mine = text.find(term.lower(), at + len(other)) if term else -1
    return not (mine >= 0 and _COORDINATED.match(text[at + len(other) : mine]))


def _source(sentence: str, drug: str, res: ctx.ContextResult, turn: TurnInput) -> str:
    if res.owner or _SOMEONE_ELSE.search(sentence):
        return "someone_else"
    if _OUTSIDE.search(sentence):
        return "outside_clinician"
    if drug in _OTC_DRUGS or _OTC.search(sentence):
        return "otc"
    return ""
