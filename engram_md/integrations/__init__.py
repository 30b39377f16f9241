"""How agents reach the memory: the daemon's memory operations, the MCP server, the
Claude Code hook's settings."""
