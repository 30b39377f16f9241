"""How data enters: transcript formats, sources, sanitizing, the journal, the buffer, the
pipeline."""
