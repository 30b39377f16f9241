"""The `engram-md` command: parse arguments, call the library, render. Nothing else.

One module per kind of command (ingesting, reading, maintaining) over one frame (base); the
library below never imports from here.
"""

from . import ingesting, maintaining, reading  # noqa: F401  (each registers its commands)
from .base import app, main

__all__ = ["app", "main"]
