"""Neighbour support: same session, told within the window of a strong hit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engram_md.recall.neighbors import neighbour_support

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=30)


def test_support_comes_from_strong_hits_nearby_in_the_same_session() -> None:
    keys = [
        ("s1", T0),  # the strong hit
        ("s1", T0 + timedelta(minutes=5)),  # its neighbour
        ("s1", T0 + timedelta(hours=5)),  # same session, much later
        ("s2", T0 + timedelta(minutes=1)),  # another session at the same time
        ("", T0),  # no known session
    ]
    relevance = [0.9, 0.1, 0.2, 0.3, 0.05]
    support = neighbour_support(keys, relevance, strong=1, window=WINDOW)
    assert support == [0.0, 0.9, 0.0, 0.0, 0.0]


def test_the_best_nearby_hit_counts_and_weak_ones_do_not() -> None:
    keys = [("s1", T0), ("s1", T0 + timedelta(minutes=1)), ("s1", T0 + timedelta(minutes=2))]
    relevance = [0.5, 0.8, 0.1]
    assert neighbour_support(keys, relevance, strong=2, window=WINDOW) == [0.8, 0.5, 0.8]
    # Only the strongest hit spreads support when strong=1; it gets none from itself.
    assert neighbour_support(keys, relevance, strong=1, window=WINDOW) == [0.8, 0.0, 0.8]
    assert neighbour_support(keys, relevance, strong=0, window=WINDOW) == [0.0, 0.0, 0.0]
