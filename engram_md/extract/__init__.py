"""From turns to candidate facts: the Extractor seam, the LLM and offline extractors, normalize."""
