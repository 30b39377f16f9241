"""The extractor seam: turns in, candidate facts out.

Two implementations: :class:`~engram_md.llm_extractor.LLMExtractor` (any OpenAI-compatible
endpoint) and :class:`~engram_md.offline_extractor.OfflineExtractor` (heuristics, the default).
Tests plug fakes into the same seam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .models import CandidateFact, Turn


class Extractor(Protocol):
    name: str

    def extract(self, turns: Sequence[Turn], speakers: Mapping[str, str]) -> list[CandidateFact]:
        """Candidate facts for one session's turns, in order.

        ``speakers`` maps each turn id to a display name. Raises
        :class:`~engram_md.errors.ExtractionError` when the turns must be kept for retry.
        """
        ...
