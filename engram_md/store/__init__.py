"""The memory folder's own files: fact files, the fact store, the exact-dedup hashes, the access
log."""
