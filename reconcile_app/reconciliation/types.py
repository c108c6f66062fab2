"""Plain-data contracts of reconciliation: findings and their citations (no ORM)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconcile_app.fhir.clinical import ClinicalEntry


class FindingKind(StrEnum):
    AGREEMENT = "agreement"
    CONTRADICTION = "contradiction"
    GAP = "gap"
    NO_CLINICAL_RELEVANCE = "no_clinical_relevance"


DISCREPANCY_KINDS = (FindingKind.CONTRADICTION, FindingKind.GAP)


class Severity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


SEVERITY_RANK = {Severity.LOW: 1, Severity.MEDIUM: 2, Severity.HIGH: 3}


def rule_family(rule: str) -> str:
    """A rule code's first two words ("med-dose-mismatch" -> "med-dose", "redflag-melena+reread" -> "redflag-melena"):
    the family the judge's features and the evaluation's breakdown group rules by."""
    parts = rule.replace("+", "-").replace(":", "-").split("-")
    return "-".join(parts[:2])


class FindingCategory(StrEnum):
    """The record side's categories (as in the evaluation labels)."""

    MEDICATION = "medication"
    CONDITION = "condition"
    ALLERGY = "allergy"
    PROCEDURE = "procedure"
    IMMUNIZATION = "immunization"
    OBSERVATION = "observation"
    CAREPLAN = "careplan"


@dataclass(frozen=True)
class Citation:
    resource_type: str
    id: str
    system: str = ""
    code: str = ""
    display: str = ""

    @classmethod
    def of(cls, entry: ClinicalEntry) -> Citation:
        """The citation of a record entry: its type, id, primary coding and display."""
        coding = entry.primary_coding
        return cls(entry.resource_type, entry.id, coding.system if coding else "", coding.code if coding else "", entry.display)

    def as_dict(self) -> dict[str, str]:
        return {"resourceType": self.resource_type, "id": self.id, "system": self.system, "code": self.code, "display": self.display}


@dataclass
class FindingDraft:
    kind: str
    severity: str = Severity.LOW
    safety_critical: bool = False
    category: str = ""
    citations: list[Citation] = field(default_factory=list)
    explanation: str = ""
    rule: str = ""  # the rule id or prompt version that produced it
    engine: str = ""
    engine_version: str = ""
    gate_notes: list[str] = field(default_factory=list)  # citation gate / safety floor actions

    @property
    def is_discrepancy(self) -> bool:
        return self.kind in DISCREPANCY_KINDS
