"""Spreading activation over the fact graph, refined by personalized PageRank. Pure: no I/O.

Recall hands in seed scores ``{fact_id: score}`` (its own ranking of the query's matches);
activation flows from each seed along graph edges:

    activation(v) = max over paths seed -> v of  score(seed) * Π (hop_decay * confidence(edge))

over at most ``max_hops`` edges, ignoring edges weaker than ``min_edge``. Every edge is walked
in both directions (a cause helps find its effect and the other way round); the path keeps
each edge as stored, so `explain` can print ``causal a -> b (0.57)``. Keeping the best path
rather than a sum makes the number explainable: it is the product along the path shown.

Then ``pagerank_iterations`` steps of PageRank over the activated subgraph, restarting at the
seeds (damping 0.85, a dangling node's mass goes back to the seeds), measure how central each
node is among what the query woke up. The final score is the spread score scaled by
``0.5 + 0.5 * pagerank / max(pagerank)``: PageRank can take at most half away, so a node far
out on one weak spoke ranks below one that many activated facts point at.

:class:`Adjacency` is built once from the edges (recall keeps it in memory) as CSR arrays;
each hop and each PageRank step is a handful of numpy operations, so the cost follows the
number of activated nodes, not the size of the graph (at most :data:`MAX_NODES` are).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np

from ..core.config import GraphConfig

DAMPING = 0.85
# Bound on activated nodes per query (see :func:`spread`).
MAX_NODES = 400


# Step and Activation are NamedTuples rather than frozen dataclasses: recall builds one per
# reached node on every query, and a tuple is several times cheaper to construct.


class Step(NamedTuple):
    """One edge of a path, as stored: ``source -> target`` of ``kind`` with its confidence."""

    kind: str
    source: str
    target: str
    confidence: float


class Activation(NamedTuple):
    node: str
    score: float  # what recall should use: spread scaled by centrality
    spread: float  # best-path spreading activation
    pagerank: float  # personalized PageRank, scaled so the most central node is 1.0
    seed: str  # the seed the best path starts at (the node itself for a seed)
    path: tuple[Step, ...]  # from the seed to the node; empty for a seed itself

    @property
    def hops(self) -> int:
        return len(self.path)


class Adjacency:
    """Read-only adjacency of the fact graph in CSR form. Build once, query many times.

    Every edge is walked in both directions; ``edges[edge_at[p]]`` is the edge (as stored)
    behind CSR position ``p``.
    """

    def __init__(self, edges: Iterable[tuple[str, str, str, float]]) -> None:
        """``edges``: (kind, source, target, confidence) tuples; parallel edges are fine."""
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.edges: list[Step] = []  # each edge once, as stored
        index, ids = self.index, self.ids
        sources: list[int] = []
        targets: list[int] = []
        for kind, source, target, confidence in edges:
            if source == target:
                continue
            for name in (source, target):
                if name not in index:
                    index[name] = len(ids)
                    ids.append(name)
            sources.append(index[source])
            targets.append(index[target])
            self.edges.append(Step(kind, source, target, float(confidence)))
        m = len(self.edges)
        src = np.array(sources, dtype=np.int64)
        dst = np.array(targets, dtype=np.int64)
        # Both directions, grouped by the node they leave from (CSR).
        owners = np.concatenate([src, dst])
        order = np.argsort(owners, kind="stable")
        self.indices = np.concatenate([dst, src])[order]
        #: edge_at[p]: the edge (index into :attr:`edges`) behind CSR position p.
        self.edge_at = np.concatenate([np.arange(m), np.arange(m)])[order]
        confidences = np.fromiter((e.confidence for e in self.edges), dtype=np.float64, count=m)
        self.weights = confidences[self.edge_at]
        self.indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(owners, minlength=len(ids)), out=self.indptr[1:])

    def __len__(self) -> int:
        return len(self.ids)

    def degree(self, node: str) -> int:
        i = self.index.get(node)
        return 0 if i is None else int(self.indptr[i + 1] - self.indptr[i])

    def gather(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(CSR positions, owning node) of every edge of ``nodes``, without a Python loop."""
        starts = self.indptr[nodes]
        lengths = self.indptr[nodes + 1] - starts
        total = int(lengths.sum())
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        return offsets + np.arange(total, dtype=np.int64), np.repeat(nodes, lengths)


def spread(
    adjacency: Adjacency,
    seeds: Mapping[str, float],
    *,
    min_edge: float = 0.2,
    max_hops: int = 3,
    hop_decay: float = 0.7,
    pagerank_iterations: int = 8,
    max_nodes: int = MAX_NODES,
) -> dict[str, Activation]:
    """Activation of every node reached from ``seeds`` (seeds included), by node id.

    At most ``max_nodes`` nodes are activated: when a hop would pass that, only its strongest
    new nodes are kept, so a hub (a name every fact mentions) cannot make recall slow.
    """
    index = adjacency.index
    score = np.zeros(len(adjacency), dtype=np.float64)
    outside: dict[str, float] = {}  # seeds the graph does not know: reported as they are
    for name, value in seeds.items():
        i = index.get(name)
        if i is None:
            if value > 0:
                outside[name] = float(value)
        elif value > score[i]:
            score[i] = value
    seed_score = score.copy()
    # layers[h]: node -> the edge it was best reached by at hop h.
    layers: list[dict[int, int]] = [{}]
    frontier = seed_nodes = np.flatnonzero(score)
    active_count = frontier.size
    for _hop in range(max_hops):
        if frontier.size == 0:
            break
        positions, owners = adjacency.gather(frontier)
        weights = adjacency.weights[positions]
        keep = weights >= min_edge
        positions, owners, weights = positions[keep], owners[keep], weights[keep]
        targets = adjacency.indices[positions]
        # Scores as they stood after the previous hop: a path never gains a hop in passing.
        candidate = score[owners] * hop_decay * weights
        order = np.lexsort((-candidate, targets))
        ordered = targets[order]
        first = np.ones(ordered.size, dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        chosen = order[first]
        better = candidate[chosen] > score[targets[chosen]]
        chosen = chosen[better]
        fresh = score[targets[chosen]] == 0
        room = max_nodes - active_count
        if int(fresh.sum()) > room:
            # Improvements to nodes already active always count; new nodes compete for room.
            new = chosen[fresh]
            strongest = new[np.argsort(-candidate[new], kind="stable")[: max(room, 0)]]
            chosen = np.concatenate([chosen[~fresh], strongest])
        reached = targets[chosen]
        active_count += int(np.count_nonzero(score[reached] == 0))
        score[reached] = candidate[chosen]
        edge_ids = adjacency.edge_at[positions[chosen]]
        layers.append(dict(zip(reached.tolist(), edge_ids.tolist(), strict=True)))
        frontier = reached
    active = np.flatnonzero(score)
    ranks = _pagerank(adjacency, active, score, seed_score, min_edge, pagerank_iterations)
    result: dict[str, Activation] = {}
    steps, ids = adjacency.edges, adjacency.ids
    # Paths layer by layer: a node reached at hop h extends its parent's path as it stood at
    # the parent's latest hop before h.
    paths: dict[int, tuple[Step, ...]] = {i: () for i in seed_nodes.tolist()}
    origin: dict[int, int] = {i: i for i in paths}
    for layer in layers[1:]:
        found: list[tuple[int, tuple[Step, ...], int]] = []
        for node, edge in layer.items():
            step = steps[edge]
            parent = index[step.source] if index[step.target] == node else index[step.target]
            found.append((node, paths[parent] + (step,), origin[parent]))
        for node, path, seed in found:
            paths[node], origin[node] = path, seed
    scores = score[active].tolist()
    rank_of = ranks.tolist() if ranks is not None else None
    for j, i in enumerate(active.tolist()):
        value = scores[j]
        rank = rank_of[j] if rank_of is not None else 1.0
        result[ids[i]] = Activation(
            ids[i], value * (0.5 + 0.5 * rank), value, rank, ids[origin[i]], paths[i]
        )
    for name, value in outside.items():
        result[name] = Activation(name, value, value, 1.0, name, ())
    return result


def activate(
    adjacency: Adjacency, seeds: Mapping[str, float], cfg: GraphConfig
) -> dict[str, Activation]:
    """:func:`spread` with the recall settings of ``cfg``."""
    return spread(
        adjacency,
        seeds,
        min_edge=cfg.min_edge,
        max_hops=cfg.max_hops,
        hop_decay=cfg.hop_decay,
        pagerank_iterations=cfg.pagerank_iterations,
    )


def _pagerank(
    adjacency: Adjacency,
    active: np.ndarray,
    score: np.ndarray,
    seed_score: np.ndarray,
    min_edge: float,
    iterations: int,
) -> np.ndarray | None:
    """Personalized PageRank over the activated nodes (``active``, sorted), max scaled to 1."""
    k = active.size
    if iterations <= 0 or k < 2:
        return None
    positions, owners = adjacency.gather(active)
    targets = adjacency.indices[positions]
    weights = adjacency.weights[positions]
    rows = np.searchsorted(active, owners)
    cols = np.minimum(np.searchsorted(active, targets), k - 1)
    keep = (active[cols] == targets) & (weights >= min_edge)
    rows, cols, weights = rows[keep], cols[keep], weights[keep]
    if rows.size == 0:
        return None
    out_weight = np.bincount(rows, weights=weights, minlength=k)
    share = weights / out_weight[rows]
    dangling = out_weight == 0
    restart = seed_score[active]
    if restart.sum() <= 0:
        return None
    restart = restart / restart.sum()
    rank = score[active] / score[active].sum()
    for _ in range(iterations):
        flow = np.bincount(cols, weights=rank[rows] * share, minlength=k)
        rank = (1 - DAMPING) * restart + DAMPING * (flow + rank[dangling].sum() * restart)
    top = float(rank.max())
    return rank / top if top > 0 else None
