"""Commands that take turns in: `run` (the daemon) and `ingest`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.allocator import set_up_long_work
from ..core.errors import EngramError
from ..ingest.sources import stdin_binary
from .base import app, config, err, fail

# The composition root (app) and the commands over an opened folder (consolidation, doctor,
# forget) import LanceDB, onnxruntime and openai: 1.6 s of start-up on these machines
# (python -X importtime). Commands that open no index (status, history, traces, --help) must
# not pay it, so those modules are imported inside the commands that use them: the one
# exception to imports at the top of a module, made only in the cli package.

# ---------------------------------------------------------------- run / ingest


@app.command()
def run(
    watch: Annotated[
        list[Path] | None,
        typer.Option("--watch", "-w", help="Transcript files or folders to tail."),
    ] = None,
    stdin: Annotated[
        bool | None,
        typer.Option(
            "--stdin/--no-stdin",
            help="Read turns from stdin (default: yes unless --watch is given).",
        ),
    ] = None,
) -> None:
    """The daemon: read turns from stdin and/or watched transcripts, remember what matters."""
    set_up_long_work()  # before the native thread pools start (see allocator.py)
    from ..app import open_engine, serving  # start-up cost: see the top of this module

    watch = watch or []
    use_stdin = stdin if stdin is not None else not watch
    try:
        engine = open_engine(config())
    except EngramError as exc:
        raise fail(exc) from None
    try:
        with serving(engine):
            engine.runner.run(stdin=stdin_binary() if use_stdin else None, watch=watch)
    except EngramError as exc:
        raise fail(exc) from None
    finally:
        engine.close()
    _summary(engine.pipeline.stats, engine.runner.bad_lines, engine.pipeline.buffer.depth())


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help="Transcript files to read once.")],
) -> None:
    """Run the pipeline once over transcript files, flushing (and consolidating, when the
    daemon's schedule is due) at the end."""
    set_up_long_work()  # before the native thread pools start (see allocator.py)
    from ..app import open_engine  # start-up cost: see the top of this module

    try:
        engine = open_engine(config())
    except EngramError as exc:
        raise fail(exc) from None
    try:
        for path in files:
            engine.runner.ingest_file(path)
        engine.pipeline.flush()
        engine.catch_up()
    except EngramError as exc:
        raise fail(exc) from None
    finally:
        engine.close()
    _summary(engine.pipeline.stats, engine.runner.bad_lines, engine.pipeline.buffer.depth())


def _summary(stats: Any, bad_lines: int, pending: int) -> None:
    parts = [
        f"{stats.turns_received} turns received",
        f"{stats.facts_written} memories written",
        f"{stats.facts_confirmed} confirmed",
    ]
    if stats.turns_replayed:
        parts.append(f"{stats.turns_replayed} already seen")
    if bad_lines:
        parts.append(f"{bad_lines} bad lines skipped")
    if stats.extraction_failures:
        parts.append(f"{stats.extraction_failures} failed extractions")
    if pending:
        parts.append(f"{pending} turns kept in the journal for retry")
    err.print("engram-md: " + ", ".join(parts), markup=False)
