"""The extraction interface: a session of turns in, memory deltas out."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from reconcile_app.fhir.clinical import ClinicalRecord
from reconcile_app.narrative.types import MemoryDraft, SessionInput


class Extractor(ABC):
    name: str = ""
    version: str = ""  # bump when output can change: it keys idempotency and is stored on memories

    @abstractmethod
    def extract_session(
        self,
        session: SessionInput,
        *,
        prior: Sequence[MemoryDraft] = (),
        record: ClinicalRecord | None = None,
    ) -> list[MemoryDraft]:
        """Memories for the session's patient turns, in turn order.

        `prior` is the patient's current memory (for update/supersede deltas and chains);
        `record` supplies the patient's own record displays as extra lexicon entries.
        Must be deterministic for the same input and never raise on hostile text.
        """
