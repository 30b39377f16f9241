"""Answering a query: ranking under a token budget, and the daemon's loopback recall endpoint."""
