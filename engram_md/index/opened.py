"""The opened parts of one memory folder, as the composition root hands them to commands.

:func:`engram_md.app.open_writer` and :func:`engram_md.app.open_reader` build them; consolidation,
doctor, forget and reindex receive them and never open a lock, a store or an index themselves.
The value lives here, below those commands, so they can name its type without importing the
composition root above them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import Config
from ..core.lock import WriterLock
from ..core.paths import MemoryLayout
from ..extract.llm_client import Usage
from ..store.fact_store import MemoryStore
from ..text.embeddings import Embedder
from .indexer import Indexer
from .table import MemoryIndex


@dataclass
class FolderParts:
    """One folder's store, embedder and index, opened for writing or for reading.

    A writer holds the folder's lock for as long as the parts are open and has an
    ``indexer`` that keeps the index true to the folder. A reader holds no lock; its ``index``
    is the table as it stands (None when there is none it can use) and its ``indexer`` None.
    """

    cfg: Config
    layout: MemoryLayout
    store: MemoryStore
    embedder: Embedder | None
    index: MemoryIndex | None
    indexer: Indexer | None = None
    usage: Usage = field(default_factory=Usage)
    lock: WriterLock | None = None  # held by a writer while the parts are open

    @property
    def writer(self) -> bool:
        return self.lock is not None
