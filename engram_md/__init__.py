"""engram-md: a memory sidecar for chat agents, with a markdown folder as the source of truth."""

__version__ = "0.1.0"
