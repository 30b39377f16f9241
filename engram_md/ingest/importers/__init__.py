"""Chat exports people already have, read into turns of the pipeline: ChatGPT's and
Claude.ai's data exports (``exports`` reads the file, ``chatgpt`` and ``claude`` know each
shape, ``feed`` runs the conversations through the pipeline)."""

from .exports import Conversation, ExportSource, Item, Malformed, open_export
from .feed import ExportKind, ImportReport, feed, read_export

__all__ = [
    "Conversation",
    "ExportKind",
    "ExportSource",
    "ImportReport",
    "Item",
    "Malformed",
    "feed",
    "open_export",
    "read_export",
]
