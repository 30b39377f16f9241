"""Neighbours of a strong hit: memories told in the same stretch of the same conversation.

An answer is often spread over a few consecutive turns ("I painted a sunrise" ... "that was
last year at the lake"), and extraction cuts those turns into separate memories. When one of
them matches a query well, the memories told right next to it are the likeliest place for
the rest of the answer, even when their own words match the query poorly.

"Right next to it" needs an order within a session. The index holds no per-session sequence
number, and turn ids are opaque strings, so the order used here is time: same ``session``
and ``created`` within a window. With per-turn timestamps that is the surrounding few
minutes of talk; with one timestamp per conversation sitting it widens to the whole sitting,
which is coarser but still the right neighbourhood.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta


def neighbour_support(
    keys: Sequence[tuple[str, datetime]],
    relevance: Sequence[float],
    *,
    strong: int,
    window: timedelta,
) -> list[float]:
    """For each item, the best relevance among the ``strong`` most relevant *other* items
    sharing its session and told within ``window`` of it (0.0 when there is none).

    ``keys`` are ``(session, created)`` per item, ``relevance`` the matching scores. Items
    with an empty session have no known conversation and get no support. Cost is one pass
    over the items per strong hit, so a large pool stays cheap.
    """
    n = len(keys)
    support = [0.0] * n
    if strong <= 0 or n < 2:
        return support
    hits = sorted(range(n), key=lambda i: -relevance[i])[:strong]
    for h in hits:
        session, created = keys[h]
        if not session:
            continue
        value = relevance[h]
        for i in range(n):
            if i == h or support[i] >= value:
                continue
            other_session, other_created = keys[i]
            if other_session == session and abs(other_created - created) <= window:
                support[i] = value
    return support
