"""Where the index lives: a folder on this machine (``state/index``, the default) or a prefix in
an S3-compatible object store (``index.uri: s3://bucket/prefix``), with the options LanceDB
needs to reach it.

An index in an object store is what lets recall run on other machines: one writer daemon
keeps it true to the memory folder, and any number of ``engram-md serve --read-only``
daemons elsewhere answer recall from it, each following the new table versions the writer
commits. Lance commits a version by writing its manifest with a conditional put (create the
object only if it does not exist), so a store that honours ``If-None-Match`` refuses a second
writer's conflicting commit instead of letting it overwrite the first; readers only ever
open committed versions, so a writer killed mid-write leaves the table readable at the
version before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.config import IndexConfig
from ..core.errors import ConfigError

# URI schemes LanceDB opens that are object stores rather than folders. Only S3 (and the
# S3-compatible stores: MinIO, R2, moto) has options in our config; the others take theirs
# from the platform's own environment.
_REMOTE_SCHEMES = ("s3://", "gs://", "az://")


@dataclass(frozen=True)
class IndexLocation:
    """A LanceDB database URI and the storage options to open it with."""

    uri: str
    # Never printed: it may hold the secret access key (see __str__).
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def local(cls, path: Path) -> IndexLocation:
        return cls(str(path))

    @property
    def local_dir(self) -> Path | None:
        """The folder of a local index; None for one in an object store."""
        return None if self.uri.startswith(_REMOTE_SCHEMES) else Path(self.uri)

    def __str__(self) -> str:
        return self.uri


def index_location(cfg: IndexConfig, default_dir: Path) -> IndexLocation:
    """The configured place of the index: ``default_dir`` (``state/index``) unless
    ``index.uri`` names another folder or an ``s3://bucket/prefix``."""
    uri = (cfg.uri or "").strip()
    if not uri:
        return IndexLocation.local(default_dir)
    if not uri.startswith(_REMOTE_SCHEMES):
        if "://" in uri:
            raise ConfigError(
                f"index.uri must be a folder or an s3://bucket/prefix URI, got {uri!r}"
            )
        return IndexLocation.local(Path(uri).expanduser())
    if uri.startswith("s3://") and not uri[len("s3://") :].split("/", 1)[0]:
        raise ConfigError(f"index.uri names no bucket: {uri!r}")
    # Options in config are S3's; gs:// and az:// take theirs from the environment.
    return IndexLocation(uri.rstrip("/"), s3_options(cfg) if uri.startswith("s3://") else {})


def s3_options(cfg: IndexConfig) -> dict[str, str]:
    """The storage options LanceDB's S3 client takes, from the ones set in config (keys as
    LanceDB's object store names them; unset ones are left to its own defaults)."""
    store = cfg.storage_options
    pairs = {
        "aws_endpoint": store.endpoint,
        "aws_region": store.region,
        "aws_access_key_id": store.access_key_id,
        "aws_secret_access_key": store.secret_access_key,
    }
    options = {key: value for key, value in pairs.items() if value}
    if store.allow_http:
        options["allow_http"] = "true"
    return options
