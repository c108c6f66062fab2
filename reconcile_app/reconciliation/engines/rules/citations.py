"""What a finding cites beside the entry it is about: indications, conditions the patient's words point at, body sites."""
from __future__ import annotations

import re

from reconcile_app.fhir.clinical import ClinicalEntry, State
from reconcile_app.reconciliation.knowledge import Knowledge, norm, regex_text
from reconcile_app.reconciliation.matching import concepts_in_text, sites_in_text

from .verdict import Context


class CitationRules:
    """What a finding cites beside the entry it is about: the rules of this category, mixed into RulesReconciler."""

    kb: Knowledge

    def _context_conditions(self, ctx: Context, text: str) -> list[ClinicalEntry]:
        """Active conditions the patient's words point at: named concepts, or a body site ("for my knee")."""
        found = ctx.idx.conditions_for(concepts_in_text(text, self.kb) - {"pain", "infection", "edema"})
        found += [e for e in self._site_related(ctx, sites_in_text(text, self.kb)) if e.resource_type == "Condition"]
        return found

    def _indications(self, ctx: Context, classes: set[str], text: str = "") -> list[ClinicalEntry]:
        concepts: set[str] = set()
        for cid in classes:
            cls = self.kb.classes.get(cid)
            if cls:
                concepts |= set(cls.indications)
        concepts |= self._purpose_concepts(text)
        found = self._conditions_with_related(ctx, concepts)
        procedures = {p for cid in classes if cid in self.kb.classes for p in self.kb.classes[cid].procedures}
        found += [e for e, pids, _ in ctx.idx.procedures if pids & procedures and e.state == State.ACTIVE]
        return found

    def _purpose_concepts(self, text: str) -> set[str]:
        out: set[str] = set()
        for match in re.finditer(r"\bfor (?:my|the|his|her|our|a|an|some)? ?((?:\w+ ){0,2}\w+)", regex_text(text)):
            phrase = norm(match.group(1))
            for concept in self.kb.conditions.values():
                if any(f" {norm(p).strip()} " in phrase for p in (*concept.purpose, *concept.terms)):
                    out.add(concept.id)
        return out

    def _conditions_with_related(self, ctx: Context, concepts: set[str]) -> list[ClinicalEntry]:
        found = ctx.idx.conditions_for(concepts)
        if not found:
            related = {r for c in concepts if c in self.kb.conditions for r in self.kb.conditions[c].related}
            found = ctx.idx.conditions_for(related)
        return found

    def _site_related(self, ctx: Context, sites: set[str]) -> list[ClinicalEntry]:
        if not sites:
            return []
        out: list[ClinicalEntry] = []
        for ce in ctx.idx.conditions:
            if ce.entry.state == State.ACTIVE and sites_in_text(ce.entry.display, self.kb) & sites and "encounter-diagnosis" not in ce.entry.category:
                out.append(ce.entry)
        for entry, _, psites in ctx.idx.procedures:
            if entry.state == State.ACTIVE and psites & sites:
                out.append(entry)
        for site in self.kb.sites:
            if site.id in sites:
                out.extend(ctx.idx.conditions_for(set(site.conditions)))
        return out[:3]
