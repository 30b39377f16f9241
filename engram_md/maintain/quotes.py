"""Where text quotes a forgotten statement, so that forget can mark it and keep the rest.

Judges' reasons, discard previews, reports and other facts' ``statusHistory`` may repeat a
statement; forget replaces each quote with :data:`FORGOTTEN_MARK` and leaves the record in
place (they are audit trails). Each store applies :meth:`Quotes.scrub` to its own text.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..text.words import WORD

# What stands where forgotten text was quoted (telemetry, reports, other facts' history).
FORGOTTEN_MARK = "[forgotten]"
# A run of this many words of a forgotten statement counts as quoting it (see Quotes).
QUOTE_WORDS = 5


class Quotes:
    """The quotes of some statements, to replace with :data:`FORGOTTEN_MARK`.

    A quote is any run of :data:`QUOTE_WORDS` consecutive words
    (:data:`~engram_md.text.words.WORD`) of a statement (all of it, if shorter), compared word
    by word, ignoring case and punctuation; overlapping runs merge into one mark. A judge's
    reason or a preview that repeats the statement, in part or whole, is caught; a
    paraphrase, or one distinctive word on its own, is not: marking every shared word would
    blank other memories' audit trail too.
    """

    def __init__(self, statements: Iterable[str]) -> None:
        self._runs: dict[int, set[tuple[str, ...]]] = {}  # run length -> word runs
        for text in statements:
            words = [w.casefold() for w in WORD.findall(text)]
            n = min(QUOTE_WORDS, len(words))
            if n:
                runs = self._runs.setdefault(n, set())
                runs.update(tuple(words[i : i + n]) for i in range(len(words) - n + 1))

    def __bool__(self) -> bool:
        return bool(self._runs)

    def scrub(self, text: str) -> str:
        if not self._runs or not text:
            return text
        spans = [m.span() for m in WORD.finditer(text)]
        words = [text[a:b].casefold() for a, b in spans]
        quoted = [False] * len(words)
        for n, runs in self._runs.items():
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) in runs:
                    quoted[i : i + n] = [True] * n
        out: list[str] = []
        end = 0
        for i, hit in enumerate(quoted):
            if hit and (i == 0 or not quoted[i - 1]):
                out += [text[end : spans[i][0]], FORGOTTEN_MARK]
            if hit:
                end = spans[i][1]
        return "".join(out) + text[end:] if out else text
