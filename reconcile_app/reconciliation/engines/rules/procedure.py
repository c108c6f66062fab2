"""Procedure memories: outside procedures (named, by their instrument and site, or in slang), denied ones, the record's
documented ones, ongoing therapies the record knows, and what is not a procedure event at all."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import DATA_DIR, Knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import content_words, procedures_in_text, sites_in_text, vaccines_in_text
from reconcile_app.reconciliation.types import Severity

from .condition import _dated_past
from .cues import pattern as cue_pattern_of
from .cues import (
    CHAT_WORDS, DONE, GENERIC_SCOPE, PLANNED, PROCEDURE_DONE, PROCEDURE_FUTURE, PROCEDURE_GENERIC, PROCEDURE_HEADS, SURGERY,
)
from .verdict import (
    AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _days_apart, _grounded_term, _long_ago, _short, _with_attributes,
)


@dataclass(frozen=True)
class ProcedureFacts:
    """What the procedure table says beyond its names (data/procedures.json)."""

    once: bool = False  # an organ removed or a joint replaced: any recorded one is the same procedure
    recurring: bool = False  # an ongoing therapy (dialysis, chemotherapy): the record knows it, not one date
    routine: bool = False  # a blood draw or stitches out: nothing to add to the record
    frames: tuple[tuple[str, ...], ...] = ()  # an instrument or action near a site ("camera ... throat")


@lru_cache(maxsize=1)
def procedure_facts() -> dict[str, ProcedureFacts]:
    rows = json.loads((DATA_DIR / "procedures.json").read_text(encoding="utf-8"))
    return {r["id"]: ProcedureFacts(bool(r.get("once")), bool(r.get("recurring")), bool(r.get("routine")),
                                    tuple(tuple(norm(w).strip() for w in group) for group in r.get("frames", ())))
            for r in rows}


def procedures_by_frame(text: str, own: str = "", window: int = 8) -> set[str]:
    """Procedures named by an instrument or an action near a site, in any order ("the camera down the throat", "they
    pulled two molars"); with `own`, the text is the whole turn and one of the frame's words must be in `own` (the
    dislocation in one sentence, its reduction in the next)."""
    words = norm(text).split()
    joined = f" {' '.join(words)} "
    own_normed = norm(own) if own else joined
    found = set()
    for pid, facts in procedure_facts().items():
        if len(facts.frames) != 2:
            continue
        heads = [_word_index(joined, h) for h in facts.frames[0]]
        sites = [_word_index(joined, s) for s in facts.frames[1]]
        window_here = window if not own else 3 * window
        if any(abs(h - s) <= window_here for hs in heads for h in hs for ss in sites for s in ss) and \
                any(f" {w} " in own_normed for group in facts.frames for w in group):
            found.add(pid)
    return found


def _word_index(joined: str, phrase: str) -> list[int]:
    out, start = [], joined.find(f" {phrase} ")
    while start != -1:
        out.append(joined[:start + 1].count(" ") - 1)
        start = joined.find(f" {phrase} ", start + 1)
    return out


class ProcedureRules:
    """Procedure memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _event_time(self, m: MemoryDraft) -> datetime:
        if m.event_time is not None and m.event_time.start is not None:
            return m.event_time.start
        return m.mention_time

    def _days_from_event(self, m: MemoryDraft, recorded: str) -> int | None:
        """Days between a recorded date and the event: zero inside a stated period ("last year" holds a July date),
        else the days to its nearer end; without an event time, to the mention."""
        start = self._event_time(m)
        end = m.event_time.end if m.event_time is not None and m.event_time.end is not None else start
        to_start, to_end = _days_apart(recorded, start), _days_apart(recorded, end)
        if to_start is None or to_end is None:
            return to_start
        return 0 if start.isoformat()[:10] <= recorded[:10] <= end.isoformat()[:10] else min(to_start, to_end)

    def _procedure_like(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        if procedures_in_text(text, self.kb) or procedures_by_frame(m.quote):
            return self._procedure(m, ctx)
        return None

    def _procedure_in_chatter(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        """A procedure or vaccine a chatty sentence names by its instrument or slang ("they did the camera down the
        throat", "put it back in at the hospital"): read as that category when it says it was done to the patient."""
        if m.assertion != Assertion.AFFIRMED or not PROCEDURE_DONE.search(regex_text(m.quote)) or _OTHER_DOER.search(regex_text(m.quote)):
            return None
        ids = procedures_in_text(m.quote, self.kb) or procedures_by_frame(ctx.around(m), own=m.quote)
        facts = procedure_facts()
        if ids and not all(facts.get(i, ProcedureFacts()).routine for i in ids):
            found = self._procedure(_with_attributes(m, {"name": ", ".join(sorted(ids)).replace("_", " ")}), ctx)
            return found if found.kind in (GAP, CONTRA) else None
        return None

    def _procedure_ids(self, m: MemoryDraft) -> set[str]:
        name = _attr(m, "name")
        ids = procedures_in_text(name, self.kb) if name else set()
        return ids or procedures_in_text(m.content, self.kb) or procedures_in_text(m.quote, self.kb) or procedures_by_frame(m.quote)

    def _procedure(self, m: MemoryDraft, ctx: Context) -> Verdict:
        """In order: a vaccine, not a procedure event (routine, unnamed, only spoken of, still to come), denied, history,
        an ongoing therapy the record knows, the record's own procedure, else an outside procedure."""
        name = _attr(m, "name")
        text = " ".join([name, m.content, m.quote])
        ids = self._procedure_ids(m)
        if not ids and vaccines_in_text(text, self.kb) and not SURGERY.search(regex_text(text)):
            return self._immunization(m, ctx)
        facts = procedure_facts()
        term = _grounded_term(m) if m.category == "procedure" and not ids else ""
        quiet = _not_an_event(m, ids, term, facts)
        if quiet is not None:
            return quiet
        matches = self._recorded(m, ctx, ids, term)
        q = regex_text(m.quote)
        if m.assertion == Assertion.NEGATED:
            return self._procedure_denied(m, ctx, matches)
        if m.assertion == Assertion.AFFIRMED and PLANNED.search(q) and not DONE.search(q):
            # "she keeps trying to get me to have one": proposed, not done; nothing to add to the record yet
            return Verdict(NCR, Cat.PROCEDURE, "procedure-proposed", explanation="A proposed procedure; nothing done yet.")
        if m.assertion == Assertion.HISTORICAL or _long_ago(m) or (matches and _retold(m)):
            if matches:
                return Verdict(AGREE, Cat.PROCEDURE, "procedure-historical-known", explanation="The procedure is in the record.").cite(*matches)
            return Verdict(NCR, Cat.PROCEDURE, "procedure-historical")
        known = self._known_procedure(m, ctx, ids, matches, facts)
        if known is not None:
            return known
        return self._outside_procedure(m, ctx, ids, matches)

    def _recorded(self, m: MemoryDraft, ctx: Context, ids: set[str], term: str) -> list[ClinicalEntry]:
        """The record's procedures the memory names: by the table's concept, else by the extractor's grounded words."""
        if ids:
            return [e for e, pids, _ in ctx.idx.procedures if pids & ids and e.state == State.ACTIVE]
        words = content_words(term) | content_words(_attr(m, "name"))
        return [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and content_words(e.display) & words]

    def _procedure_denied(self, m: MemoryDraft, ctx: Context, matches: list[ClinicalEntry]) -> Verdict:
        if not matches and GENERIC_SCOPE.search(regex_text(m.quote)):
            # "never had one of those scope tests": a bare 'scope' is any -scopy the record documents
            matches = [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and "scop" in e.display.lower()]
        if matches and _DENIED_HAVING.search(regex_text(m.quote)):
            return Verdict(CONTRA, Cat.PROCEDURE, "procedure-denied", Severity.LOW, False,
                           f"Record documents {_short(matches[0])} ({matches[0].date[:10]}); patient says it was never done.").cite(*matches)
        return Verdict(NCR, Cat.PROCEDURE, "procedure-negated")

    def _known_procedure(self, m: MemoryDraft, ctx: Context, ids: set[str], matches: list[ClinicalEntry],
                         facts: dict[str, ProcedureFacts]) -> Verdict | None:
        """The record already knows it: an ongoing therapy it documents in any form, a once-only procedure on any date,
        or the same procedure within three months of the event."""
        recurring = [i for i in ids if facts.get(i, ProcedureFacts()).recurring]
        if recurring:
            terms = [t for p in self.kb.procedures if p.id in recurring for t in p.terms]
            plans = ctx.idx.careplans_mentioning(terms)
            if matches or plans:
                return Verdict(AGREE, Cat.PROCEDURE, "procedure-ongoing-known",
                               explanation="An ongoing therapy the record documents.").cite(*(matches[:2] or plans[:1]))
        if matches and any(facts.get(i, ProcedureFacts()).once for i in ids):
            return Verdict(AGREE, Cat.PROCEDURE, "procedure-recorded-once",
                           explanation=f"Record documents {_short(matches[0])} on {matches[0].date[:10]}.").cite(*matches[:2])
        close = [e for e in matches if self._days_from_event(m, e.date) is not None and self._days_from_event(m, e.date) <= 90]
        if close:
            return Verdict(AGREE, Cat.PROCEDURE, "procedure-recorded", explanation=f"Record documents {_short(close[0])} on {close[0].date[:10]}.").cite(*close)
        return None

    def _outside_procedure(self, m: MemoryDraft, ctx: Context, ids: set[str], matches: list[ClinicalEntry]) -> Verdict:
        """A procedure the record does not document: the gap, citing what a reviewer checks beside it."""
        name = _attr(m, "name")
        text = " ".join([name, m.content, m.quote])
        sites = sites_in_text(text, self.kb)
        for p in self.kb.procedures:
            if p.id in ids:
                sites |= set(p.sites)
        label = name or ", ".join(sorted(ids)).replace("_", " ") or "surgery"
        v = Verdict(GAP, Cat.PROCEDURE, "procedure-outside", Severity.LOW, False,
                    f"Patient reports a procedure ({label}) that the record does not document"
                    + (f"; last recorded {_short(matches[0])} on {matches[0].date[:10]}." if matches else "."))
        v.cite(*sorted(matches, key=lambda e: e.date, reverse=True)[:2])
        v.cite(*self._site_related(ctx, sites | sites_in_text(ctx.around(m), self.kb)))
        v.cite(*self._context_conditions(ctx, ctx.around(m))[:2])
        v.cite(*self._word_related(ctx, " ".join([name, m.quote]))[:2])
        # a procedure done on an anticoagulant or antiplatelet needed a hold or bridge plan: the reviewer checks it
        v.cite(*ctx.idx.meds_of_classes({c.id for c in self.kb.classes.values() if c.periprocedural})[:2])
        return v

    def _word_related(self, ctx: Context, text: str) -> list[ClinicalEntry]:
        """Record conditions sharing a distinctive word with the patient's words ("hernia repair" -> "Inguinal hernia")."""
        words = {w for w in content_words(text) if len(w) >= 5} - CHAT_WORDS
        if not words:
            return []
        return [ce.entry for ce in ctx.idx.conditions if ce.entry.state in (State.ACTIVE, State.HISTORICAL) and ce.words & words]


# a denial of having it done ("never had one", "didn't get it done"), not a negation of something else in the sentence
# ("never flew with it before")
_DENIED_HAVING = re.compile(r"\b(?:never|not|n't|no)\s+(?:\w+\s+)?(?:had|got|gotten|done|did|have|has|been|one)\b|\bnever\b[^.!?]{0,20}\b(?:done|performed)\b"
                           r"|\b(?:nobody|no one|no-one)\s+(?:has\s+|had\s+|'s\s+)?(?:ever\s+)?(?:put|done|did|stuck|performed|given)\b")


# someone else had it done ("my sister had her gallbladder out"): not the patient's procedure
_OTHER_DOER = re.compile(r"\b(?:my|his|her|their) (?:son|daughter|husband|wife|brother|sister|mom|mother|dad|father|friend|neighbou?r|"
                         r"partner|cousin|aunt|uncle|grandson|granddaughter|niece|nephew|dog|cat)\b|\b(?:he|she) (?:had|got|was)\b")


def _not_an_event(m: MemoryDraft, ids: set[str], term: str, facts: dict[str, ProcedureFacts]) -> Verdict | None:
    """What is no procedure event to add: a routine draw or stitches out, words that name no procedure ("a study
    schedule", "operations at work"), a bare "surgery" with nothing said of what, when or where, one still to come."""
    q = regex_text(m.quote)
    if ids and all(facts.get(i, ProcedureFacts()).routine for i in ids):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-routine", explanation="A routine draw or follow-up; nothing to add to the record.")
    if m.assertion == Assertion.AFFIRMED and not PROCEDURE_DONE.search(q) and not any(facts.get(i, ProcedureFacts()).recurring for i in ids):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-mentioned", explanation="A procedure spoken of, not said to have been done.")
    if not ids and not term and not SURGERY.search(q):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-unnamed", explanation="No procedure identified.")
    if not ids and term and not (PROCEDURE_HEADS.search(regex_text(term)) and PROCEDURE_DONE.search(q)):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-unnamed", explanation="The words name no procedure that was done.")
    if not ids and set(re.findall(r"[a-z]+", regex_text(term))) <= PROCEDURE_GENERIC | {"the", "a", "an", "my", "big", "little"} \
            and not _attr(m, "where") and not sites_in_text(m.quote):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-unspecified", explanation="Surgery without what or where.")
    future = PROCEDURE_FUTURE.search(q) if m.assertion == Assertion.AFFIRMED else None
    if future is not None and not PROCEDURE_DONE.search(q[: future.start()]):
        return Verdict(NCR, Cat.PROCEDURE, "procedure-planned", explanation="A procedure still to come; nothing done yet.")
    return None


RETOLD_WHEN = cue_pattern_of("retold_when")
RETOLD_AGAIN = cue_pattern_of("retold_again")


def _retold(m: MemoryDraft) -> bool:
    """A procedure told as a past story (a 'when'-clause, its first time, a calendar year long before the session) with
    no date of its own and no word that makes it another one: the record's own procedure, told again."""
    if m.event_time is not None and m.event_time.start is not None:
        return False
    quote = regex_text(m.quote)
    return bool(RETOLD_WHEN.search(quote) or _dated_past(quote, m.mention_time)) and not RETOLD_AGAIN.search(quote)
