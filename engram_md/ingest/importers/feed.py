"""An export fed through the pipeline, one conversation at a time.

Each conversation is a session: its turns go through :meth:`Pipeline.receive` like any
transcript's (sanitized, journaled, buffered, extracted, deduplicated), with their own
times, and the session is flushed when the conversation ends. A turn the journal has seen
is skipped, so importing the same export again, or a newer one that holds it, changes
nothing already there; an import stopped part-way (Ctrl-C, a kill) is finished by running
it again. Without a pipeline (a dry run) the same reading is only counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from ...core.crashpoints import crashpoint
from ..pipeline import Pipeline
from . import chatgpt, claude
from .exports import ExportSource, Item, Malformed


class ExportKind(StrEnum):
    CHATGPT = "chatgpt"
    CLAUDE = "claude"


_READERS: dict[ExportKind, Callable[[ExportSource], Iterator[Item]]] = {
    ExportKind.CHATGPT: chatgpt.read_conversations,
    ExportKind.CLAUDE: claude.read_conversations,
}


def read_export(kind: ExportKind, source: ExportSource) -> Iterator[Item]:
    """The conversations of an opened export of ``kind``."""
    return _READERS[kind](source)


@dataclass
class ImportReport:
    """What an import read: conversations and turns (the person's among them), what was
    left out and why, the conversations skipped as malformed, and whether it was stopped."""

    conversations: int = 0
    turns: int = 0
    person_turns: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    malformed: list[Malformed] = field(default_factory=list)
    interrupted: bool = False


def feed(
    items: Iterable[Item],
    pipeline: Pipeline | None,
    *,
    on_item: Callable[[Item, ImportReport], None] = lambda item, report: None,
    stop: Callable[[], bool] = lambda: False,
) -> ImportReport:
    """Feed each conversation to ``pipeline`` (None: only count), flushing it when the
    conversation ends. ``on_item`` hears each conversation or malformed one once it is done;
    ``stop`` is asked before each: when it says yes, the import ends there."""
    report = ImportReport()
    for item in items:
        if stop():
            report.interrupted = True
            break
        if isinstance(item, Malformed):
            report.malformed.append(item)
            on_item(item, report)
            continue
        crashpoint("import.conversation")
        if pipeline is not None:
            pipeline.receive_all(item.turns)
            pipeline.flush()  # the conversation is over: its last turns are extracted now
        report.conversations += 1
        report.turns += len(item.turns)
        report.person_turns += sum(1 for t in item.turns if t.from_person)
        report.skipped.update(item.skipped)
        on_item(item, report)
    return report
