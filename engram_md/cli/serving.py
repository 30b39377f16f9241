"""Commands that only serve: `serve --read-only` (recall from an index another daemon writes)."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from ..core.allocator import set_up_long_work
from ..core.errors import ConfigError, EngramError
from .base import app, config, err, fail

# The composition root imports LanceDB, onnxruntime and openai (1.6 s of start-up): imported
# inside the command, as in the other command modules (see cli/ingesting.py).

# How often the waiting main thread wakes to let a signal handler run.
_WAKE_SECONDS = 1.0


@app.command()
def serve(
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="Answer recall from the index as another daemon writes it; ingest nothing.",
        ),
    ] = False,
) -> None:
    """A recall daemon without the writer lock, e.g. on another machine reading an s3:// index.

    It serves recall over the loopback HTTP API like `run` does, from its own state folder,
    and follows the new index versions the writer commits (index.refresh_seconds).
    """
    if not read_only:
        raise fail(
            ConfigError("`serve` only runs --read-only; the daemon that writes is `engram-md run`")
        )
    set_up_long_work()  # before the native thread pools start (see allocator.py)
    from ..app import serving_read_only  # start-up cost: see the top of this module

    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    cfg = config()
    try:
        with serving_read_only(cfg) as server:
            err.print(
                f"serving recall (read-only) on {server.host}:{server.port} from "
                f"{cfg.index.uri or cfg.layout.index_dir}",
                markup=False,
            )
            while not stop.wait(_WAKE_SECONDS):
                pass
    except EngramError as exc:
        raise fail(exc) from None
