"""Procedure memories: outside procedures, denied ones, and the record's documented ones."""
from __future__ import annotations

from datetime import datetime

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.narrative.types import Assertion, MemoryDraft
from reconcile_app.reconciliation.knowledge import Knowledge, regex_text
from reconcile_app.reconciliation.matching import content_words, procedures_in_text, sites_in_text, vaccines_in_text
from reconcile_app.reconciliation.types import Severity

from .cues import CHAT_WORDS, DONE, GENERIC_SCOPE, PLANNED, SURGERY
from .verdict import (
    AGREE, CONTRA, Cat, Context, GAP, NCR, Verdict, _attr, _days_apart, _grounded_term, _long_ago, _short,
)


class ProcedureRules:
    """Procedure memories: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _event_time(self, m: MemoryDraft) -> datetime:
        if m.event_time is not None and m.event_time.start is not None:
            return m.event_time.start
        return m.mention_time

    def _procedure_like(self, m: MemoryDraft, ctx: Context) -> Verdict | None:
        text = " ".join([_attr(m, "name"), m.content, m.quote])
        if procedures_in_text(text, self.kb):
            return self._procedure(m, ctx)
        return None

    def _procedure(self, m: MemoryDraft, ctx: Context) -> Verdict:
        name = _attr(m, "name")
        text = " ".join([name, m.content, m.quote])
        ids = procedures_in_text(name, self.kb) if name else set()
        ids = ids or procedures_in_text(m.content, self.kb) or procedures_in_text(m.quote, self.kb)
        if not ids and vaccines_in_text(text, self.kb) and not SURGERY.search(regex_text(text)):
            return self._immunization(m, ctx)
        sites = sites_in_text(text, self.kb)
        for p in self.kb.procedures:
            if p.id in ids:
                sites |= set(p.sites)
        matches = [e for e, pids, _ in ctx.idx.procedures if pids & ids and e.state == State.ACTIVE]
        term = _grounded_term(m) if m.category == "procedure" else ""
        if not ids and term:
            # a procedure the tables do not know: match record procedures on the extractor's grounded words
            words = content_words(term) | content_words(name)
            matches = [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and content_words(e.display) & words]
        if not ids and not term and not SURGERY.search(regex_text(m.quote)):
            return Verdict(NCR, Cat.PROCEDURE, "procedure-unnamed", explanation="No procedure identified.")
        if m.assertion == Assertion.NEGATED and not matches and GENERIC_SCOPE.search(regex_text(m.quote)):
            # "never had one of those scope tests": a bare 'scope' is any -scopy the record documents
            matches = [e for e, _, _ in ctx.idx.procedures if e.state == State.ACTIVE and "scop" in e.display.lower()]
        if m.assertion == Assertion.NEGATED:
            if matches:
                return Verdict(CONTRA, Cat.PROCEDURE, "procedure-denied", Severity.LOW, False,
                               f"Record documents {_short(matches[0])} ({matches[0].date[:10]}); patient says it was never done.").cite(*matches)
            return Verdict(NCR, Cat.PROCEDURE, "procedure-negated")
        q = regex_text(m.quote)
        if m.assertion == Assertion.AFFIRMED and PLANNED.search(q) and not DONE.search(q):
            # "she keeps trying to get me to have one": proposed, not done; nothing to add to the record yet
            return Verdict(NCR, Cat.PROCEDURE, "procedure-proposed", explanation="A proposed procedure; nothing done yet.")
        if m.assertion == Assertion.HISTORICAL or _long_ago(m):
            if matches:
                return Verdict(AGREE, Cat.PROCEDURE, "procedure-historical-known", explanation="The procedure is in the record.").cite(*matches)
            return Verdict(NCR, Cat.PROCEDURE, "procedure-historical")
        when = self._event_time(m)
        close = [e for e in matches if _days_apart(e.date, when) is not None and _days_apart(e.date, when) <= 90]
        if close:
            return Verdict(AGREE, Cat.PROCEDURE, "procedure-recorded", explanation=f"Record documents {_short(close[0])} on {close[0].date[:10]}.").cite(*close)
        v = Verdict(GAP, Cat.PROCEDURE, "procedure-outside", Severity.LOW, False,
                    f"Patient reports a procedure ({name or ', '.join(sorted(ids)) or 'surgery'}) that the record does not document"
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
