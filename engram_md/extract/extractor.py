"""The extractor seam: turns in, candidate facts out.

Two implementations: :class:`~engram_md.extract.llm_extractor.LLMExtractor` (any OpenAI-compatible
endpoint) and :class:`~engram_md.extract.offline_extractor.OfflineExtractor` (heuristics, the
default).
Tests plug fakes into the same seam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.models import CandidateFact, Turn


@dataclass(frozen=True, slots=True)
class Discard:
    """Something an extractor chose not to keep, so telemetry can say what and why."""

    turn_ids: tuple[str, ...]
    reason: str
    preview: str = ""


class Extractor(Protocol):
    name: str

    @property
    def last_discarded(self) -> Sequence[Discard]:
        """What the last extract() call left out (low importance, trivial…), for telemetry."""
        ...

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        """Candidate facts for one session's turns, in order.

        ``speakers`` maps each turn id to a display name. Raises
        :class:`~engram_md.core.errors.ExtractionError` when the turns must be kept for retry.
        """
        ...
