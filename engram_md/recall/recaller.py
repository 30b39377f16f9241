"""Recall: the memories that matter for a query, within a token budget.

    query -> embed -> vector candidates + full-text candidates (one pool)
          -> status filter (inactive memories only when asked)
          -> relevance: cosine and BM25 fused by score, lifted by the query's names and
             dates, then by the strong hits a memory was told next to (neighbours)
          -> lifecycle adjustment -> seed-001 score (importance, repetition, access, kind,
             tier, recency, sigmoid); recall counts and lifecycle states are read from
             state/access.jsonl (the index and the fact files hold neither)
          -> with sentences of what was said: one ranking with the facts' votes, the turns
             said next to the best sentences lifted as their context (fusion.py, context.py)
          -> relevant preferences and procedures first, then by score
          -> leave out what repeats a kept memory (same source turns, or near-identical)
          -> cut to the budget (a token is 4 characters of content, rounded up)

Every number that shapes the ranking lives in :class:`Weights`, so `explain` can show each
part and nothing is tuned to particular questions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from ..core.config import GraphConfig, RecallConfig
from ..core.models import LifecycleState
from ..index.saidindex import SAID_KIND
from ..index.table import Hit, IndexRow, MemoryIndex
from ..organize.activation import Activation, Adjacency, Step, activate
from ..store.access import ACTIVATION_BOOST, AccessLog, Standing
from ..text.claims import DONE_TAG, tells_event
from ..text.embeddings import Embedder
from ..text.words import content_words, estimate_tokens, words
from .context import SaidOrder
from .fusion import (
    SAID,
    FusionWeights,
    SaidCandidate,
    fuse,
    said_candidates,
    statement_words,
)
from .neighbors import neighbour_support
from .query import (
    about_text,
    date_match,
    name_match,
    name_pattern,
    names_known,
    query_features,
    respelled,
)
from .result import Candidate, RecallResult, ScoreParts
from .wire import (
    DEFAULT_OPTIONS,
    Memory,
    RecallOptions,
)

# Facts only: boxes have their own short section (topic windows).
FACTS = "kind = 'fact'"
ACTIVE = "status = 'active' AND kind = 'fact'"
ACTIVE_BOXES = "status = 'active' AND kind = 'box'"
# Facts that are no longer true: the words they were drawn from are not recalled either.
OUTDATED = ("superseded", "invalidated")
NO_LONGER_TRUE = tuple(f"status = '{status}' AND kind = 'fact'" for status in OUTDATED)
# Categories that tell the agent how to behave: shown first when relevant.
PROCEDURAL = frozenset({"preference", "principle", "skill"})
UNRATED = Standing()  # a memory no consolidation has rated yet: a candidate, never recalled


@dataclass(frozen=True)
class Weights:
    candidates_per_channel: int = 200
    # Relevance fuses the two channels by score: a share of the cosine plus a share of the
    # BM25 score relative to the best in the pool. Scores rather than ranks, so a memory that
    # matches only a common word (a name every memory carries) is not lifted just by ranking
    # high on that word, and relevance keeps a meaning of its own for the thresholds below.
    cosine_share: float = 0.6
    name_lift: float = 0.25  # relevance *= 1 + name_lift * share of the query's names carried
    date_lift: float = 0.2  # relevance *= 1 + date_lift when the memory falls in a named range
    # Neighbours: relevance += neighbour_share * relevance of the best of the strongest
    # `neighbour_hits` memories told in the same session within the window.
    neighbour_share: float = 0.1
    neighbour_hits: int = 5
    neighbour_window_minutes: float = 30.0
    lifecycle: dict[str, float] = field(
        default_factory=lambda: {
            "active": 1.05,
            "validated": 1.05,
            "candidate": 1.0,
            "stale": 0.85,
            "archived": 0.8,
        }
    )
    kind_bias: dict[str, float] = field(
        default_factory=lambda: {"procedural": 0.15, "note": 0.0, "episode": -0.1}
    )
    tier_bias: dict[str, float] = field(
        default_factory=lambda: {
            "explicit": 0.1,
            "implied": 0.0,
            "inferred": -0.05,
            "speculative": -0.1,
        }
    )
    recency_half_life_hours: float = 168.0
    weight_factor: float = 0.4  # seed 001: raw = relevance * (1 + 0.4 weight + 0.2 recency)
    recency_factor: float = 0.2
    # A preference or procedure goes first only when it is about the query: its relevance is
    # at least this share of the best relevance. Ranking by score alone would let every
    # preference in, since the kind bias lifts them all.
    procedural_floor: float = 0.85
    # Two memories this close in meaning say the same thing: the second costs budget and
    # adds nothing. A memory whose source turns were all shown already needs less: being
    # about as close as paraphrases of one statement usually are.
    duplicate_cosine: float = 0.95
    same_turns_cosine: float = 0.5
    # Graph expansion: the best `graph_seeds` memories spread activation over the fact graph
    # (entity, time and causal edges); score = (1 - graph_share) * own score + graph_share *
    # activation, and memories the graph reached that the search did not are added.
    graph_seeds: int = 10
    graph_share: float = 0.35
    # Topic windows: up to this many memory boxes (a stretch of a conversation, summarized)
    # about the query, after the facts, within the budget. Off by default: on the LoCoMo dev
    # conversations they cost budget that facts used better (docs/ARCHITECTURE.md).
    topic_windows: int = 0
    window_min_cosine: float = 0.3
    window_share: float = 0.15  # of the budget, at most
    # A memory whose meaning is this far from the query (MiniLM cosine) is not about it,
    # however it ranks: a question about something never discussed gets an empty block, not
    # the whole folder. When the query names someone or something no memory mentions, it is
    # about something this folder never heard of, and only a close match may answer it.
    # Measured on the LoCoMo dev folders and the sample conversation (docs/ARCHITECTURE.md).
    relevance_floor: float = 0.2
    unknown_name_floor: float = 0.45
    # When nothing reaches the floor, the best few full-text matches still answer a query
    # whose names are known (or that names nobody): MiniLM does not know that uv is a
    # package manager ("which package manager should I use?"), the words "use" do.
    lexical_rescue: int = 3
    # What was said (memory/said/): its sentences and the notes in one ranking (fusion.py).
    fusion: FusionWeights = field(default_factory=FusionWeights)
    # A sentence said holds a memory with this many words that tell something: not its
    # speaker's name, not an acknowledgment (:func:`telling_words`). One: in chat an answer
    # is often a single word ("at 6am", "the 14th").
    min_sentence_words: int = 1
    # Below the relevance floor, down to this cosine: what fills the budget's rest once the
    # folder clearly knows what is asked.
    fill_floor: float = 0.1


WEIGHTS = Weights()

# What people type to acknowledge, greet or react, not to tell: a said sentence of these and
# its speaker's name holds no memory. Words that may answer a question ("fine", "great" for
# "how did it go?") are not among them, which is why this is not the extractor's longer
# list of what is not worth a fact (extract.mentions.PLEASANTRIES): with that one, conv-30
# lost 0.013 at 500 tokens and three held-out conversations 0.001-0.004.
ACKNOWLEDGMENTS = frozenset(
    "yes yeah yep yup ya no nope nah ok okay kk sure thanks thank thx ty lol lmao haha "
    "hahaha hehe hi hey hello bye wow oh ah aw hmm um uh omg".split()
)


def telling_words(row: IndexRow) -> int:
    """How many words of a sentence said tell something: content words other than its
    speaker's name and :data:`ACKNOWLEDGMENTS` ("Dana: Yes." none, "Lee: at 6am" one)."""
    skip = set(words(row.speaker)) | ACKNOWLEDGMENTS
    return sum(1 for word in content_words(row.content) if word not in skip)


def votes(row: IndexRow, asks_time: bool, history: bool) -> bool:
    """Whether a fact votes for the sentences of its turn: an active one does; with
    ``history``, so does one superseded or invalidated that stays true as history -- it tells
    of an event ("I lost my job last month" after "I'm back at work"), it is a plan carried
    out (tagged done), or the question is about time -- though it is not recalled itself."""
    if row.status == "active":
        return True
    if not history or row.status not in OUTDATED:
        return False
    return asks_time or DONE_TAG in row.tags or tells_event(row.content)


# ---------------------------------------------------------------- recall


class Recaller:
    """Answers recall queries from an open index. Safe to share between threads."""

    def __init__(
        self,
        index: MemoryIndex,
        embedder: Embedder,
        access: AccessLog,
        cfg: RecallConfig,
        *,
        weights: Weights = WEIGHTS,
        graph: Callable[[], Adjacency | None] | None = None,
        graph_cfg: GraphConfig | None = None,
        said_order: SaidOrder | None = None,
    ) -> None:
        self.index = index
        # The order of the said files' turns, for the context of a strong sentence (none:
        # sentences are ranked on their own).
        self.said_order = said_order
        # The fact graph, asked for on every query (a daemon's graph changes as it writes).
        self.graph = graph
        self.graph_cfg = graph_cfg or GraphConfig()
        self.embedder = embedder
        self.access = access
        self.cfg = cfg
        self.weights = weights

    def recall(self, query: str, options: RecallOptions = DEFAULT_OPTIONS) -> RecallResult:
        cfg, explain, record_access = self.cfg, options.explain, options.record_access
        budget = cfg.budget_tokens if options.budget_tokens is None else options.budget_tokens
        limit = cfg.top_k if options.top_k is None else options.top_k
        inactive_ok = (
            cfg.include_inactive if options.include_inactive is None else options.include_inactive
        )
        asked = query.strip()
        if not asked:
            return RecallResult(asked, (), 0, budget)
        # Only a query that names someone is read against the speakers (most name nobody).
        speakers = self.index.speakers() if query_features(asked).names else ()
        query = respelled(asked, speakers) if speakers else asked
        # What the query asks about its speakers' names, for the facts' votes (_candidates):
        # only where there are sentences to vote for.
        about = about_text(query, speakers) if speakers and self.index.holds(SAID) else query
        # explain looks at inactive memories too, to say why they were left out; history
        # (below) needs the facts that are no longer true.
        history = self.weights.fusion.history_vote > 0.0
        where = FACTS if (inactive_ok or explain or history) else ACTIVE
        pool, qvec, said_hits = self._candidates(query, about, where)
        lexical = [(hit.row, hit.score) for hit in said_hits]
        said_pool, lexical_ids, dense_ids = said_candidates(
            self.index, lexical, qvec, self.weights.fusion.depth
        )
        if not (inactive_ok or explain):
            asks_time = query_features(query).asks_time
            pool = [
                c
                for c in pool
                if c.row.status == "active" or said_pool and votes(c.row, asks_time, history)
            ]
        # The facts vote for sentences in the order of what the query asks about its names
        # (see _candidates): the same scoring, with each fact's cosine to that.
        scored, *voting = self._rankings(query, pool, about=about != query and bool(said_pool))
        if said_pool:
            # The fact ranking before the graph votes: the graph's reach, measured, lowered
            # the sentences' recall (docs/ARCHITECTURE.md "Recall").
            # A question about time ("when…", "how long…") asks for history, and what was
            # said before it changed is part of it: "when did Lee live in Berlin?" is
            # answered by the sentence the move to Munich superseded.
            factors = (self.weights.fusion.outdated_factor, self.weights.fusion.history_factor)
            sinks = (
                factors != (1.0, 1.0) and not inactive_ok and not query_features(query).asks_time
            )
            outdated = self._outdated_turns() if sinks else {}
            paths: dict[str, tuple[Step, ...]] = {}
            scored, context = self._fused(
                query,
                qvec,
                scored,
                voting[0] if voting else scored,
                said_pool,
                lexical_ids,
                dense_ids,
                outdated,
            )
        else:
            scored, paths = self._expand(query, pool, scored, qvec, inactive_ok or explain)
            context = {}
        windows = self._windows(qvec, budget)
        reserved = sum(estimate_tokens(m.content) for m in windows)
        result = self._select(
            query, scored, budget - reserved, limit, inactive_ok, explain, record_access, paths,
            context,
        )  # fmt: skip
        room = limit - len(result.memories)
        windows = windows[: max(0, room)]
        return replace(
            result,
            query=asked,
            memories=result.memories + windows,
            tokens=result.tokens + sum(estimate_tokens(m.content) for m in windows),
            budget=budget,
        )

    def _windows(self, qvec: np.ndarray, budget: int) -> tuple[Memory, ...]:
        """The "recent topic windows" section: the boxes closest to the query (recent first
        among equals), given at most ``window_share`` of the budget, taken before the facts."""
        w = self.weights
        if w.topic_windows <= 0:
            return ()
        hits = self.index.vector_search(qvec, w.topic_windows * 4, where=ACTIVE_BOXES)
        if not hits:
            return ()
        newest = max(h.row.created for h in hits)
        ranked = sorted(
            (h for h in hits if h.score >= w.window_min_cosine),
            key=lambda h: -h.score * (1 + w.recency_factor * _recency(newest, h.row, w)),
        )
        allowance = int(budget * w.window_share)
        chosen: list[Memory] = []
        for hit in ranked[: w.topic_windows]:
            cost = estimate_tokens(hit.row.content)
            if cost > allowance:
                continue
            allowance -= cost
            row = hit.row
            chosen.append(
                Memory(row.id, row.path, row.category, row.memory_kind, row.content,
                       hit.score, row.source_turn_ids, row.created, row.valid_at)
            )  # fmt: skip
        return tuple(chosen)

    # ------------------------------------------------------------ stages
    def _candidates(
        self, query: str, about: str, where: str | None
    ) -> tuple[list[_Pooled], np.ndarray, list[Hit]]:
        """Both channels' fact candidates, once each: cosine for all, BM25 where the text
        matched; and the sentences of what was said that the same full-text query found."""
        k = self.weights.candidates_per_channel
        # One full-text query answers for facts and sentences alike. It is answered in memory
        # in well under a millisecond, so it runs here: handing it to a thread to overlap the
        # embedding cost more than it hid (p50 9.3 against 11.2 ms on a dev folder).
        fact_hits, said_hits = self.index.text_search_each(query, k, [where, SAID])
        # A fact carries its holder's name ("Jon loves running his studio"), so a question
        # naming Jon is close in meaning to every fact about Jon, whatever it asks, and the
        # facts that voted for sentences first were those that shared the name best. So each
        # fact is also measured against ``about``, what the question asks about the speakers
        # it names (about_text): the votes follow that order, and the name lift still counts
        # who. Cross-checked on the dev pair and its two chat rewrites (docs/ARCHITECTURE.md
        # "Recall"); one more text in the model run (~2 ms) for a question naming someone.
        if about != query:
            qvec, avec = self.embedder.embed([query, about])
        else:
            qvec = avec = self.embedder.embed([query])[0]
        pool: dict[str, _Pooled] = {}
        for hit in self.index.vector_search(qvec, k, where=where, exact=False):
            pool[hit.row.id] = _Pooled(hit.row, hit.score, 0.0, ["vector"])
        for hit in fact_hits:
            found = pool.get(hit.row.id)
            if found is None:
                pool[hit.row.id] = _Pooled(hit.row, _cosine(hit.row, qvec), hit.score, ["text"])
            else:
                found.bm25 = hit.score
                found.channels.append("text")
        for c in pool.values():
            c.about = c.cosine if avec is qvec else _cosine(c.row, avec)
        return list(pool.values()), qvec, said_hits

    def _fused(
        self,
        query: str,
        qvec: np.ndarray,
        scored: list[tuple[IndexRow, ScoreParts, list[str]]],
        voting: list[tuple[IndexRow, ScoreParts, list[str]]],
        said_pool: Sequence[SaidCandidate],
        lexical: Sequence[str],
        dense: Sequence[str],
        outdated: Mapping[tuple[str, str], Sequence[frozenset[str]]],
    ) -> tuple[list[tuple[IndexRow, ScoreParts, list[str]]], dict[str, str]]:
        """Sentences of what was said and the facts' notes in one ranking (fusion.py); each
        item keeps the parts of its own relevance, its score is the fused one. Also the
        sentences lifted as the context of a strong one, each with that one's id."""
        w = self.weights
        names = query_features(query).names
        # The facts that vote for the sentences they were drawn from: the active ones, and
        # those no longer true whose words stay true as history (see votes()).
        asks_time, history = query_features(query).asks_time, w.fusion.history_vote > 0.0
        facts = [row for row, _, _ in voting if votes(row, asks_time, history)]
        fused = fuse(
            self.index, said_pool, lexical, dense, facts, names, outdated, w.fusion, self._around
        )
        by_fact = {row.id: (parts, channels) for row, parts, channels in scored}
        said = {c.row.id: c for c in said_pool}
        best_bm25 = max((c.bm25 for c in said_pool), default=0.0) or 1.0
        pattern = name_pattern(names)
        out: list[tuple[IndexRow, ScoreParts, list[str]]] = []
        for item in fused:
            row = item.row
            if row.id in by_fact:
                parts, channels = by_fact[row.id]
                out.append((row, replace(parts, score=item.score), channels))
                continue
            found = said.get(row.id)
            cosine = found.cosine if found is not None else _cosine(row, qvec)
            fts_rel = found.bm25 / best_bm25 if found is not None else 0.0
            name = name_match(row, names, pattern)
            relevance = (w.cosine_share * max(0.0, cosine) + (1 - w.cosine_share) * fts_rel) * (
                1 + w.name_lift * name
            )
            parts = ScoreParts(
                cosine, fts_rel, name, 0.0, 0.0, relevance, 1.0, row.importance, 0.0, 0.0,
                0.0, 0.0, 0.0, 0.0, item.score, item.score, 0.0, item.score,
            )  # fmt: skip
            channels = list(found.channels) if found is not None else ["fact vote"]
            if item.context_of:
                channels.append("context")
            out.append((row, parts, channels))
        return out, {item.row.id: item.context_of for item in fused if item.context_of}

    def _expand(
        self,
        query: str,
        pool: list[_Pooled],
        scored: list[tuple[IndexRow, ScoreParts, list[str]]],
        qvec: np.ndarray,
        inactive_ok: bool,
    ) -> tuple[list[tuple[IndexRow, ScoreParts, list[str]]], dict[str, tuple[Step, ...]]]:
        """Spread activation from the best memories over the fact graph and blend it in.

        Memories the graph reaches that the search missed join the pool (scored like the
        others, with no full-text score), so a fact linked to a strong hit by an entity, a
        time step or a stated cause can be recalled though it shares no words with the query.
        Edges naming memories the index does not hold (a file deleted by hand) lead nowhere.
        """
        w = self.weights
        adjacency = self.graph() if self.graph is not None else None
        if adjacency is None or not len(adjacency) or w.graph_share <= 0 or not scored:
            return scored, {}
        seeds = {
            row.id: parts.own
            for row, parts, _ in scored[: w.graph_seeds]
            if row.status == "active" and parts.own > 0
        }
        if not seeds:
            return scored, {}
        reached: dict[str, Activation] = activate(adjacency, seeds, self.graph_cfg)
        # Edges can name facts whose files were deleted by hand (the graph is cleaned up by
        # consolidation and `doctor`): a path through one of them leads nowhere.
        on_paths = {n for a in reached.values() for s in a.path for n in (s.source, s.target)}
        indexed = self.index.get(sorted(on_paths | set(reached)))
        reached = {
            node: a
            for node, a in reached.items()
            if node in indexed and all(s.source in indexed and s.target in indexed for s in a.path)
        }
        known = {c.row.id for c in pool}
        extra = [
            _Pooled(indexed[node], _cosine(indexed[node], qvec), 0.0, ["graph"])
            for node in sorted(reached)
            if node not in known
            and indexed[node].kind == "fact"
            and (inactive_ok or indexed[node].status == "active")
        ]
        if extra:
            pool = pool + extra
            scored = self._score(query, pool)
        share = w.graph_share
        blended = []
        paths: dict[str, tuple[Step, ...]] = {}
        for row, parts, channels in scored:
            hit = reached.get(row.id)
            graph = hit.score if hit is not None else 0.0
            if hit is not None and hit.path:
                paths[row.id] = hit.path
                if "graph" not in channels:
                    channels = [*channels, "graph"]
            final = (1 - share) * parts.own + share * graph
            blended.append((row, replace(parts, graph=graph, score=final), channels))
        blended.sort(key=lambda item: (-item[1].score, item[0].id))
        return blended, paths

    def _score(
        self, query: str, pool: list[_Pooled]
    ) -> list[tuple[IndexRow, ScoreParts, list[str]]]:
        """The pool scored and ranked, best first."""
        return self._rankings(query, pool, about=False)[0]

    def _rankings(
        self, query: str, pool: list[_Pooled], *, about: bool
    ) -> list[list[tuple[IndexRow, ScoreParts, list[str]]]]:
        """The pool scored and ranked, best first; with ``about``, a second ranking by each
        candidate's cosine to what the query asks about its names (see _candidates). What
        does not depend on the cosine is worked out once for both."""
        w = self.weights
        features = query_features(query)
        pattern = name_pattern(features.names)
        best_bm25 = max((c.bm25 for c in pool), default=0.0) or 1.0
        usage = self.access.usage()
        now = max((c.row.created for c in pool), default=datetime.now(UTC))
        # Relevance before neighbours: fused channels, lifted by the query's names and dates.
        lifts: list[float] = []
        fixed: list[tuple[float, ...]] = []
        for c in pool:
            row = c.row
            names = name_match(row, features.names, pattern)
            dates = date_match(row, features.ranges)
            lifts.append((1 + w.name_lift * names) * (1 + w.date_lift * dates))
            standing = usage.standings.get(row.id, UNRATED)
            state = standing.lifecycle or LifecycleState.CANDIDATE
            # Recalls since the last consolidation lift importance (seed 000's boost); every
            # recall, folded in or not, counts for the access bonus.
            recent = usage.recent.get(row.id, 0)
            importance = min(1.0, row.importance + ACTIVATION_BOOST * recent)
            rep = min(0.7, 0.17 * math.log1p(row.confirmations))
            acc = min(0.55, 0.12 * math.log1p(standing.accesses + recent))
            kind_key = "procedural" if row.category in PROCEDURAL else row.memory_kind
            kind = w.kind_bias.get(kind_key, 0.0)
            tier = w.tier_bias.get(_tier(row.confidence), 0.0)
            lifecycle = w.lifecycle.get(state.value, 1.0)
            recency = _recency(now, row, w)
            fts_rel = c.bm25 / best_bm25
            fixed.append(
                (fts_rel, names, dates, lifecycle, importance, rep, acc, kind, tier, recency)
            )
        places = [(c.row.session, c.row.created) for c in pool]
        strong = w.neighbour_hits if w.neighbour_share else 0
        window = timedelta(minutes=w.neighbour_window_minutes)
        rankings = []
        for cosines in [[c.cosine for c in pool]] + ([[c.about for c in pool]] if about else []):
            base = [
                (w.cosine_share * max(0.0, cosine) + (1 - w.cosine_share) * f[0]) * lift
                for cosine, f, lift in zip(cosines, fixed, lifts, strict=True)
            ]
            support = neighbour_support(places, base, strong=strong, window=window)
            out = []
            for c, cosine, rel, f, nb in zip(pool, cosines, base, fixed, support, strict=True):
                fts_rel, names, dates, lifecycle, importance, rep, acc, kind, tier, recency = f
                relevance = (rel + w.neighbour_share * nb) * lifecycle
                weight = importance + rep + acc + kind + tier
                raw = relevance * (1 + w.weight_factor * weight + w.recency_factor * recency)
                score = 2 / (1 + math.exp(-2 * raw)) - 1
                parts = ScoreParts(
                    cosine, fts_rel, names, dates, nb, relevance, lifecycle, importance, rep,
                    acc, kind, tier, recency, weight, raw, score, 0.0, score,
                )  # fmt: skip
                out.append((c.row, parts, c.channels))
            out.sort(key=lambda item: (-item[1].score, item[0].id))
            rankings.append(out)
        return rankings

    def _around(self, row: IndexRow, reach: int) -> Sequence[str]:
        """The turns said within ``reach`` lines of a said row's turn (see fusion.fuse)."""
        if self.said_order is None:
            return ()
        return self.said_order.around(row.path, row.source_turn_ids[0], reach)

    def _outdated_turns(self) -> dict[tuple[str, str], list[frozenset[str]]]:
        """The words of each superseded or invalidated fact, by the (session, turn) pairs it
        was drawn from."""
        out: dict[tuple[str, str], list[frozenset[str]]] = {}
        names = ["session", "source_turn_ids", "content", "speaker", "tags"]
        for where in NO_LONGER_TRUE:
            found = self.index.columns_where(where, names)
            rows = zip(*(found[name] for name in names), strict=True)
            for session, turns, content, speaker, tags in rows:
                if DONE_TAG in (tags or ()):
                    continue  # a plan carried out: what was said of it stays true
                words = statement_words(content, speaker or "")
                for turn in turns:
                    out.setdefault((session, turn), []).append(words)
        return out

    def _select(
        self,
        query: str,
        scored: list[tuple[IndexRow, ScoreParts, list[str]]],
        budget: int,
        limit: int,
        inactive_ok: bool,
        explain: bool,
        record_access: bool,
        paths: Mapping[str, tuple[Step, ...]] | None = None,
        context: Mapping[str, str] | None = None,
    ) -> RecallResult:
        w = self.weights
        paths, context = paths or {}, context or {}
        cosines = {row.id: parts.cosine for row, parts, _ in scored} if context else {}
        names_unknown = not names_known((row for row, _, _ in scored), query_features(query))
        min_cosine = w.unknown_name_floor if names_unknown else w.relevance_floor
        # The rescue is for a query nothing reaches by meaning; ranking them in beside
        # memories that do cost evidence recall on the LoCoMo dev conversations.
        reached = any(p.cosine >= min_cosine for r, p, _ in scored if r.status == "active")
        rescued = set() if names_unknown or reached else _best_lexical(scored, w.lexical_rescue)
        best = max(
            (p.relevance for r, p, _ in scored if inactive_ok or r.status == "active"),
            default=0.0,
        )
        floor = w.procedural_floor * best

        def first(row: IndexRow, parts: ScoreParts) -> bool:
            return row.category in PROCEDURAL and parts.relevance >= floor

        ordered = [i for i in scored if first(i[0], i[1])] + [
            i for i in scored if not first(i[0], i[1])
        ]
        kept: list[tuple[IndexRow, ScoreParts]] = []
        kept_vectors = np.empty((limit, self.index.dim), dtype=np.float32)
        # (session, source turn) -> positions in kept: turn ids are unique within a session.
        shown_turns: dict[tuple[str, str], list[int]] = {}
        decisions: dict[str, str] = {}
        used = 0
        # A sentence said that comes close to a question without reaching the floor waits,
        # when the folder clearly knows what is asked: a memory of its conversation is as
        # close as a question about an unknown name needs. The waiting sentences then fill
        # what the budget has left, best first. Short chat messages answer in words that
        # match a question poorly ("three, give or take" for "How old is the ferret?");
        # a note is written to stand alone, so one below the floor is not about the question.
        topic_sessions = (
            set()
            if names_unknown
            else {
                r.session
                for r, p, _ in scored
                if r.status == "active" and p.cosine >= w.unknown_name_floor
            }
        )
        waiting: list[tuple[IndexRow, ScoreParts, list[str]]] = []
        for position, item in enumerate(itertools.chain(ordered, waiting)):
            row, parts, _ = item
            if not inactive_ok and row.status != "active":
                decisions[row.id] = f"left out: status {row.status}"
                continue
            floor_here = w.fill_floor if position >= len(ordered) else min_cosine
            # (A memory the graph reached from a strong hit is about the query through it,
            # though its own words are not; so is a sentence lifted as the context of one
            # that passes, when the folder clearly knows what is asked (as for the waiting
            # sentences below): the reason told in the message after the one a question
            # matches. Carried in any folder, they lengthened the answers to the other dev
            # conversation's questions: 96.5% -> 88.7% under 100 tokens.)
            carried = (
                row.id in context
                and row.session in topic_sessions
                and cosines.get(context[row.id], 0.0) >= floor_here
            )
            if parts.cosine < floor_here and not (row.id in paths or row.id in rescued or carried):
                if (
                    row.kind == SAID_KIND
                    and parts.cosine >= w.fill_floor
                    and row.session in topic_sessions
                ):
                    waiting.append(item)  # (only in the first pass: it is below the floor)
                decisions[row.id] = (
                    f"left out: below the relevance floor ({parts.cosine:.2f} < {min_cosine:.2f}"
                    + (", the query's names are unknown here)" if names_unknown else ")")
                )
                continue
            if len(kept) >= limit:
                decisions[row.id] = "left out: top-k reached"
                continue
            cost = estimate_tokens(row.content)
            if used + cost > budget:
                decisions[row.id] = f"left out: over budget ({cost} tokens, {budget - used} left)"
                continue
            vector = row.vector if row.vector is not None else np.zeros(self.index.dim)
            similar = kept_vectors[: len(kept)] @ vector
            if kept and float(similar.max()) >= w.duplicate_cosine:
                closest = float(similar.max())
                decisions[row.id] = f"left out: near-duplicate of a kept memory ({closest:.2f})"
                continue
            turns = [(row.session, t) for t in row.source_turn_ids]
            if row.kind == SAID_KIND and telling_words(row) < w.min_sentence_words:
                # "Dana: Yes.", "ok thanks": the speaker's name matches a question about
                # them, and nothing else does; shown, it would stand for its whole turn.
                decisions[row.id] = "left out: a sentence too short to hold a memory"
                continue
            if row.kind == SAID_KIND and any(t in shown_turns for t in turns):
                # A turn is shown once, by its best sentence or a fact drawn from it: the
                # budget goes further on other turns (every sentence of a turn allowed:
                # 0.892/0.852 on the LoCoMo dev conversations, against 0.915/0.858).
                decisions[row.id] = "left out: its turn is shown already"
                continue
            if turns and all(t in shown_turns for t in turns):
                # Told in turns already shown: a restatement if it also reads like what was
                # kept from them (several distinct facts from one turn read differently).
                sharing = {k for t in turns for k in shown_turns[t]}
                closest = max(float(similar[k]) for k in sharing)
                if closest >= w.same_turns_cosine:
                    decisions[row.id] = (
                        f"left out: restates kept memories of the same source turns ({closest:.2f})"
                    )
                    continue
            kept_vectors[len(kept)] = vector
            for turn in turns:
                shown_turns.setdefault(turn, []).append(len(kept))
            used += cost
            kept.append((row, parts))
            decisions[row.id] = "kept" + (
                " (relevant preference: shown first)" if first(row, parts) else ""
            )
        memories = tuple(
            Memory(
                row.id,
                row.path,
                row.category,
                row.memory_kind,
                row.content,
                parts.score,
                row.source_turn_ids,
                row.created,
                row.valid_at,
            )  # fmt: skip
            for row, parts in kept
        )
        if record_access and memories:
            self.access.record(_recalled_facts(kept, scored))
        candidates: tuple[Candidate, ...] = ()
        if explain:
            candidates = tuple(
                Candidate(row, parts, decisions.get(row.id, "").startswith("kept"),
                          decisions.get(row.id, ""), tuple(channels), paths.get(row.id, ()))
                for row, parts, channels in scored
            )  # fmt: skip
        return RecallResult(query, memories, used, budget, candidates)


@dataclass(slots=True)
class _Pooled:
    """A candidate while the pool is gathered (mutable: the text channel adds its score)."""

    row: IndexRow
    cosine: float
    bm25: float
    channels: list[str]
    about: float = 0.0  # cosine to what the query asks about its names (set once gathered)


def _best_lexical(scored: Sequence[tuple[IndexRow, ScoreParts, list[str]]], count: int) -> set[str]:
    """The ids of the ``count`` candidates with the best full-text score (any at all)."""
    matched = sorted(
        ((parts.fts_rel, row.id) for row, parts, _ in scored if parts.fts_rel > 0), reverse=True
    )
    return {row_id for _, row_id in matched[:count]}


def _recalled_facts(
    kept: Sequence[tuple[IndexRow, ScoreParts]],
    scored: Sequence[tuple[IndexRow, ScoreParts, list[str]]],
) -> list[str]:
    """The facts a recall showed, for the access log: those kept, and those drawn from the
    turn of a kept sentence (shown in the words they were drawn from). Without the second,
    facts recalled through their sentences would look unused and decay."""
    by_turn: dict[tuple[str, str], list[str]] = {}
    for row, _, _ in scored:
        if row.kind != SAID_KIND:
            for turn in row.source_turn_ids:
                by_turn.setdefault((row.session, turn), []).append(row.id)
    ids: list[str] = []
    for row, _ in kept:
        if row.kind != SAID_KIND:
            ids.append(row.id)
            continue
        for turn in row.source_turn_ids:
            ids.extend(by_turn.get((row.session, turn), ()))
    return list(dict.fromkeys(ids))


def _cosine(row: IndexRow, qvec: np.ndarray) -> float:
    if row.vector is None:
        return 0.0
    return float(np.dot(row.vector, qvec))


def _recency(now: datetime, row: IndexRow, w: Weights) -> float:
    age_hours = max(0.0, (now - row.created).total_seconds() / 3600)
    return math.exp(-age_hours / w.recency_half_life_hours)


def _tier(confidence: float) -> str:
    if confidence >= 0.95:
        return "explicit"
    if confidence >= 0.70:
        return "implied"
    if confidence >= 0.40:
        return "inferred"
    return "speculative"
