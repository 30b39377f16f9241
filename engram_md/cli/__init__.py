"""The `engram-md` command: parse arguments, call the library, render. Nothing else.

One module per kind of command (ingesting, importing, reading, maintaining, integrating) over
one frame (base); the library below never imports from here.
"""

from . import (  # noqa: F401  (each registers its commands)
    importing,
    ingesting,
    integrating,
    maintaining,
    reading,
    serving,
)
from .base import app, main

__all__ = ["app", "main"]
