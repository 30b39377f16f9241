"""The one exception tree of engram-md.

Library code raises these; only the CLI turns them into a message and an exit status.
Third-party errors are mapped at the seam where they occur (``raise X(...) from exc``).

    EngramError
    ├── ConfigError            bad or unreadable configuration
    ├── LockError              another writer holds the memory folder
    ├── InputError             a transcript line that is none of the accepted formats
    ├── MemoryFileError        a memory file that cannot be read (broken frontmatter, bad YAML)
    ├── UnsafePathError        a write that would leave the memory folder (a planted link)
    ├── ExtractionError        an extraction attempt failed; its turns are kept for retry
    │   ├── LLMUnavailable     timeout, connection error, 429 / 5xx after all retries
    │   └── LLMOutputError     the model answered, but not with usable JSON
    ├── EmbeddingError         the embedder could not produce vectors
    ├── IndexError_            the LanceDB index could not be read or written
    └── RecallServerError      the daemon's recall endpoint misbehaved
"""

from __future__ import annotations


class EngramError(Exception):
    """Base of every error engram-md raises on purpose."""


class ConfigError(EngramError):
    """The configuration file or an environment override is invalid."""


class LockError(EngramError):
    """Another engram-md process is writing to the same memory folder."""


class InputError(EngramError):
    """A transcript line could not be understood.

    Carries where the line came from so the report can name it.
    """

    def __init__(self, reason: str, *, source: str = "", line: int = 0) -> None:
        self.reason = reason
        self.source = source
        self.line = line
        where = f"{source}:{line}: " if source else ""
        super().__init__(f"{where}{reason}")


class MemoryFileError(EngramError):
    """A markdown file under the memory folder could not be parsed."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class UnsafePathError(EngramError, ValueError):
    """A path that resolves outside the memory folder, e.g. through a symbolic link someone
    planted in it: nothing is written there. Also a ValueError, as it was before it had a
    name of its own."""


class ExtractionError(EngramError):
    """Extraction failed; the caller keeps the turns and retries later."""


class LLMUnavailable(ExtractionError):
    """The LLM could not be reached or kept failing (timeouts, 429, 5xx)."""


class LLMOutputError(ExtractionError):
    """The LLM answered with something that is not the JSON we asked for."""


class EmbeddingError(EngramError):
    """Vectors could not be computed (model missing, endpoint failing)."""


class IndexError_(EngramError):  # noqa: N801 - trailing underscore avoids the builtin
    """The search index could not be opened, read or written."""


class RecallServerError(EngramError):
    """The daemon's recall endpoint answered with an error."""
