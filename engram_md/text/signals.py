"""Signal scan: a cheap, local regex pass that says how much a turn is worth remembering.

Every turn goes through here before it is buffered, so the scan must cost microseconds, not
milliseconds: it decides *when* the (expensive) extractor runs, never *what* gets stored.
A false positive only makes extraction run a little earlier; a false negative only delays it
until the next batch trigger. That asymmetry is why the patterns lean towards recall.

Levels follow the reference system: any HIGH pattern gives ``Level.HIGH``; two or more
distinct MEDIUM patterns give ``Level.MEDIUM``; exactly one gives ``Level.LOW``; nothing
gives ``Level.NONE``.

The built-in patterns are in :mod:`.signal_patterns`.

How it stays fast: each pattern is compiled once at import and searched on its own, but only
after a *gate* — sets of words at least one of which must occur in any text the pattern can
match — has been checked against the set of words of the turn (one tokenisation per turn).
Most patterns are skipped by a set intersection instead of a regex search. One combined
alternation was measured too, and was slower with the ``regex`` module: a big alternation
defeats the literal-prefix skipping each pattern gets on its own, and needs overlap
bookkeeping to report every pattern that hits. ``bench/signal_bench.py`` measures the scan.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import regex as _re

from ..core.config import SignalConfig
from ..core.errors import ConfigError
from ..core.models import Level, Signal
from .signal_patterns import BUILTIN_PATTERNS, PATTERN_FLAGS, URGENT, Pattern, words_of

log = logging.getLogger(__name__)

# A user pattern that backtracks catastrophically must not stall the daemon: after this many
# seconds its search is abandoned and counted as a miss (with a warning).
CUSTOM_PATTERN_TIMEOUT_SECONDS = 0.05


def _compile_custom(sources: Sequence[str], level: Level, key: str) -> list[Pattern]:
    """Compile user patterns; a bad one is a configuration error that names it."""
    label = "high" if level is Level.HIGH else "medium"
    out: list[Pattern] = []
    for i, source in enumerate(sources):
        try:
            compiled = _re.compile(source, PATTERN_FLAGS)
        except (_re.error, TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(
                f"signals.{key}[{i}]: invalid regular expression {source!r}: {exc}"
            ) from exc
        out.append(Pattern(f"custom_{label}_{i + 1}", level, compiled, None))
    return out


def _gate_index(patterns: Sequence[Pattern]) -> dict[str, tuple[int, ...]]:
    """Word -> positions of the patterns whose first gate group holds that word."""
    index: dict[str, list[int]] = {}
    for i, p in enumerate(patterns):
        if p.gate:
            for word in p.gate[0]:
                index.setdefault(word, []).append(i)
    return {word: tuple(positions) for word, positions in index.items()}


_BUILTIN_INDEX = _gate_index(BUILTIN_PATTERNS)
_BUILTIN_INDEX_WORDS = frozenset(_BUILTIN_INDEX)
_BUILTIN_UNGATED = frozenset(i for i, p in enumerate(BUILTIN_PATTERNS) if not p.gate)


class SignalScanner:
    """Scans turn text against the built-in patterns plus the ones in the configuration."""

    def __init__(self, cfg: SignalConfig) -> None:
        custom = _compile_custom(cfg.high_patterns, Level.HIGH, "high_patterns")
        custom += _compile_custom(cfg.medium_patterns, Level.MEDIUM, "medium_patterns")
        self._custom: tuple[Pattern, ...] = tuple(custom)
        self.patterns: tuple[Pattern, ...] = BUILTIN_PATTERNS + self._custom

    def matches(self, text: str) -> list[Pattern]:
        """Every pattern that hits ``text``, in pattern order (built-ins first)."""
        words = words_of(text)
        # Candidates: patterns whose first gate group shares a word with the text. A turn
        # holds few of the gate words, so this is a handful of dict lookups.
        candidates = set(_BUILTIN_UNGATED)
        for word in words & _BUILTIN_INDEX_WORDS:
            candidates.update(_BUILTIN_INDEX[word])
        hits: list[Pattern] = []
        for i in sorted(candidates):
            p = BUILTIN_PATTERNS[i]
            gates_pass = all(not group.isdisjoint(words) for group in p.gate[1:])
            if gates_pass and p.regex.search(text) is not None:
                hits.append(p)
        for p in self._custom:
            try:
                found = p.regex.search(text, timeout=CUSTOM_PATTERN_TIMEOUT_SECONDS)
            except TimeoutError:
                # Fail open: a pathological user pattern counts as a miss, loudly.
                log.warning("signal pattern %s (%r) timed out; ignored", p.name, p.regex.pattern)
                continue
            if found is not None:
                hits.append(p)
        return hits

    def scan(self, text: str) -> Signal:
        """Level and reasons (names of the patterns that hit, deduplicated, in order)."""
        if not text:
            return Signal(Level.NONE)
        reasons: list[str] = []
        high = urgent = False
        medium = 0
        for p in self.matches(text):
            if p.name in reasons:
                continue
            reasons.append(p.name)
            if p.level is Level.HIGH:
                high = True
                # A pattern of the configuration's own is there because it matters now.
                urgent = urgent or p.name in URGENT or p in self._custom
            elif p.level is Level.MEDIUM:
                medium += 1
        if high:
            level = Level.HIGH
        elif medium >= 2:
            level = Level.MEDIUM
        elif medium == 1:
            level = Level.LOW
        else:
            level = Level.NONE
        return Signal(level, tuple(reasons), urgent)
