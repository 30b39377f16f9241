"""Commands that bring in what a person already has: `import chatgpt|claude` (a chat export)
and `remember` (a statement they want kept)."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from ..core.allocator import set_up_long_work
from ..core.config import Config, load_config
from ..core.errors import EngramError
from .base import State, app, config, err, fail, out, refused_unless_alone

if TYPE_CHECKING:
    from ..ingest.importers import ExportSource, ImportReport, Item
    from ..ingest.pipeline import Stats

# The composition root costs 1.6 s of imports, and the pipeline with its patterns 0.6 s
# (python -X importtime; see cli/ingesting.py): both are imported in the commands that use
# them, so `status` and `--help` do not pay for them.

import_app = typer.Typer(
    help="Bring your history: import a ChatGPT or Claude.ai data export.", no_args_is_help=True
)
app.add_typer(import_app, name="import")

# What the summary calls each reason a message was left out.
_SKIPPED = {
    "other_branch": "on abandoned branches",
    "system": "system",
    "hidden": "hidden",
    "tool": "tool calls and output",
    "thinking": "reasoning",
    "image": "images",
    "media": "other media",
    "attachment": "attachments",
    "file": "files",
    "empty": "empty",
}

_ExportPath = Annotated[
    Path,
    typer.Argument(
        help="The export's .zip or its conversations.json.",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
]
_DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Count what would be imported; change nothing.")
]


@import_app.command("chatgpt")
def import_chatgpt(path: _ExportPath, dry_run: _DryRun = False) -> None:
    """ChatGPT's export: the branch each conversation kept, its text, dated as said."""
    _import("chatgpt", path, dry_run=dry_run)


@import_app.command("claude")
def import_claude(path: _ExportPath, dry_run: _DryRun = False) -> None:
    """Claude.ai's export: text blocks, the speaker named from users.json; tool use and
    attachments left out."""
    _import("claude", path, dry_run=dry_run)


def _bulk_config() -> Config:
    """The configuration for an import: the journal is synced at batch ends, not per turn
    (the export itself is the copy a crash would need); a conversation is extracted in
    batches as full as one extraction takes (MAX_BATCH_TURNS), not cut at each strong
    signal, since nobody waits for it (a fifth of the batches, calls and per-batch writes on
    the bench's export); and the daemon's consolidation schedule is off (`engram-md
    consolidate` afterwards, once)."""
    from ..ingest.pipeline import MAX_BATCH_TURNS  # see the top of this module

    return load_config(
        State.config_path,
        overrides={
            **State.overrides,
            "buffer.fsync": "batch",
            "buffer.high_signal_now": False,
            "buffer.max_turns": MAX_BATCH_TURNS,
            "consolidate.every_extractions": 0,
        },
    )


def _import(kind: str, path: Path, *, dry_run: bool) -> None:
    from ..ingest.importers import ExportKind, feed, open_export, read_export  # see the top

    try:
        if dry_run:
            with open_export(path) as source, _progress(source) as show:
                report = feed(read_export(ExportKind(kind), source), None, on_item=show)
            _summary(report, None, dry_run=True)
            return
        set_up_long_work()  # before the native thread pools start (see allocator.py)
        from ..app import open_engine  # start-up cost: see the top of this module

        with refused_unless_alone("an import writes to the memory folder"):
            engine = open_engine(_bulk_config())
        try:
            with open_export(path) as source, _progress(source) as show, _stoppable() as stop:
                items = read_export(ExportKind(kind), source)
                report = feed(items, engine.pipeline, on_item=show, stop=stop)
        finally:
            engine.close()
    except EngramError as exc:
        raise fail(exc) from None
    _summary(report, engine.pipeline.stats, dry_run=False)
    if report.interrupted:
        raise typer.Exit(code=130)


@contextmanager
def _progress(source: ExportSource) -> Iterator[Callable[[Item, ImportReport], None]]:
    """A progress bar over the export's bytes, with conversations, turns, the rate and the
    time left; malformed conversations are reported above it as they come."""
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        TextColumn("{task.fields[counts]}"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    task = bar.add_task("importing", total=source.size or None, counts="")
    start = time.perf_counter()

    from ..ingest.importers import Malformed  # see the top

    def show(item: Item, report: ImportReport) -> None:
        if isinstance(item, Malformed):
            bar.console.print(
                f"engram-md: skipped conversation {item.id}: {item.reason}", markup=False
            )
        rate = report.turns / max(time.perf_counter() - start, 1e-9)
        counts = f"{report.conversations} conversations · {report.turns} turns · {rate:.0f} turns/s"
        bar.update(task, completed=source.read, counts=counts)

    with bar:
        yield show


@contextmanager
def _stoppable() -> Iterator[StopFlag]:
    """Ctrl-C ends the import after the conversation in progress (a second one at once);
    running the command again goes on from there."""
    flag = StopFlag()
    previous = signal.getsignal(signal.SIGINT)

    def handler(_signum: int, _frame: FrameType | None) -> None:
        flag.stopped = True
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


class StopFlag:
    stopped = False

    def __call__(self) -> bool:
        return self.stopped


def _summary(report: ImportReport, stats: Stats | None, *, dry_run: bool) -> None:
    verb = "would import" if dry_run else "imported"
    parts = [
        f"{verb} {report.conversations} conversations",
        f"{report.turns} turns ({report.person_turns} by the person)",
    ]
    if stats is not None:
        parts += [
            f"{stats.turns_replayed} already imported",
            f"{stats.facts_written} memories written",
            f"{stats.facts_confirmed} confirmed",
        ]
    left_out = [f"{n} {_SKIPPED.get(k, k)}" for k, n in sorted(report.skipped.items()) if n]
    if left_out:
        parts.append("left out: " + ", ".join(left_out))
    if report.malformed:
        parts.append(f"{len(report.malformed)} malformed conversations skipped")
    line = "engram-md: " + "; ".join(parts)
    if report.interrupted:
        line += "; interrupted: run the same command again to go on"
    err.print(line, markup=False, soft_wrap=True)


# ---------------------------------------------------------------- remember


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help='What to keep, in your words; "-" reads stdin.')],
) -> None:
    """Keep a statement as yours, said now, whether or not it sounds like one worth keeping."""
    from ..app import open_engine  # start-up cost: see the top of this module
    from ..ingest.remember import remember as remember_statement

    statement = sys.stdin.read() if text == "-" else text
    if not statement.strip():
        err.print("engram-md: nothing to remember (the text is empty)", markup=False)
        raise typer.Exit(code=2)
    try:
        with refused_unless_alone("remember writes to the memory folder"):
            engine = open_engine(config())
        try:
            done = remember_statement(engine.pipeline, statement)
            engine.pipeline.flush()  # turns an interrupted run left in the journal
        finally:
            engine.close()
    except EngramError as exc:
        raise fail(exc) from None
    if not done.received:
        out.print("nothing new to remember (already received, or empty once secrets were removed)")
        return
    for rel in done.written:
        out.print(f"remembered: {rel}", markup=False)
    if done.confirmed:
        out.print(f"already remembered: confirmed {done.confirmed} memory", markup=False)
