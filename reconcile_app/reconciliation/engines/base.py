"""The reconciliation interface: memories and the clinical record in, one finding per memory out."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import MemoryDraft
from reconcile_app.reconciliation.types import FindingDraft


class Reconciler(ABC):
    name: str = ""
    version: str = ""

    @abstractmethod
    def reconcile(
        self,
        memories: Sequence[MemoryDraft],
        record: ClinicalRecord,
        *,
        history: Sequence[MemoryDraft] = (),
    ) -> list[FindingDraft]:
        """Exactly one FindingDraft per memory, same order.

        `history` holds the patient's earlier memories (chains), e.g. to see that a drug the
        patient "stopped" last month is now "back on". Citations must name resources that exist
        in `record` and are not entered-in-error. Must be deterministic for the rules engine.
        """
