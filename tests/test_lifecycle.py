"""Lifecycle: decay from the epoch counter, standings (scores, states, tiers, recalls) in
state/, retirement, archival, the move of an older version's counters, idempotence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.consolidate.lifecycle import (
    adopt_former,
    decayed_importance,
    effective_importance,
    move_former_counters,
    plan_lifecycle,
    rate,
    resolved_commitments,
)
from engram_md.consolidate.plan import Change, Context, FactMove, FactUpdate, FileWrite
from engram_md.core.config import Config
from engram_md.core.models import (
    Category,
    ConfidenceTier,
    Fact,
    LifecycleState,
    MemoryKind,
    PolicyClass,
    Source,
    Status,
    VerificationState,
)
from engram_md.core.paths import MemoryLayout
from engram_md.extract.normalize import confidence_tier
from engram_md.store.access import Standing
from engram_md.store.factfile import read_fact, write_fact
from engram_md.text.hashing import content_hash

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def make_fact(
    content: str,
    *,
    category: Category = Category.FACT,
    created: datetime = NOW - timedelta(days=1),
    confidence: float = 0.95,
    importance: float = 0.5,
    kind: MemoryKind = MemoryKind.NOTE,
    session: str = "s1",
    entities: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    **changes: object,
) -> Fact:
    digest = content_hash(content)
    fact = Fact(
        id=f"{category.value}-{created:%Y%m%d-%H%M%S}-{digest[:8]}",
        category=category,
        created=created,
        updated=created,
        source=Source.OFFLINE,
        confidence=confidence,
        confidence_tier=confidence_tier(confidence),
        importance=importance,
        memory_kind=kind,
        content=content,
        session=session,
        source_turn_ids=("t1",),
        policy_class=PolicyClass.PROTECTED
        if category.value in {"decision", "principle", "commitment", "preference"}
        else PolicyClass.DURABLE,
        tags=tags,
        entities=entities,
        content_hash=digest,
    )
    return fact.with_changes(**changes) if changes else fact


class Folder:
    def __init__(self, root: Path) -> None:
        self.layout = MemoryLayout(root / "memory", root / "state")
        self.layout.ensure()
        self.cfg = Config(memory_dir=self.layout.memory_dir, state_dir=self.layout.state_dir)

    def add(self, fact: Fact) -> Path:
        path = self.layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])
        write_fact(path, fact, fsync=False)
        return path

    def facts(self) -> list[tuple[Path, Fact]]:
        roots = (self.layout.facts_dir, self.layout.archive_dir / "facts")
        return [(p, read_fact(p)) for root in roots for p in sorted(root.rglob("*.md"))]

    def ctx(
        self,
        *,
        epoch: int = 1,
        access: Mapping[str, int] | None = None,
        standings: Mapping[str, Standing] | None = None,
    ) -> Context:
        return Context(
            self.cfg, self.layout, NOW, epoch, self.facts(), dict(access or {}), standings or {}
        )


def apply(changes: Sequence[Change]) -> None:
    for change in changes:
        if isinstance(change, FactUpdate):
            write_fact(change.path, change.after, fsync=False)
        elif isinstance(change, FactMove):
            write_fact(change.target, change.after, fsync=False)
            change.source.unlink()
        elif isinstance(change, FileWrite):
            change.path.parent.mkdir(parents=True, exist_ok=True)
            change.path.write_text(change.text, encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


# ---------------------------------------------------------------- importance decay


def test_importance_decays_per_epoch_by_kind_with_floor_and_boost() -> None:
    episode = decayed_importance(0.5, "moment", "episode", 35, 0)
    note = decayed_importance(0.5, "fact", "note", 35, 0)
    procedure = decayed_importance(0.5, "preference", "note", 35, 0)
    assert episode == pytest.approx(0.5 * 0.98**35)
    assert 0.24 < episode < note < procedure < 0.5  # episodes fade fastest, procedures slowest
    assert procedure == pytest.approx(0.5 * 0.996**35)
    assert decayed_importance(0.5, "moment", "episode", 10_000, 0) == 0.01  # the floor
    assert decayed_importance(0.5, "fact", "note", 0, 3) == pytest.approx(0.59)  # 3 x 0.03
    assert decayed_importance(0.99, "fact", "note", 0, 50) == 1.0


def test_effective_importance_counts_epochs_since_the_first() -> None:
    fact = make_fact("The build uses make.", importance=0.6)

    def at(epoch: int, first: int | None) -> float:
        return effective_importance(fact, epoch=epoch, first_epoch=first, accesses=0)

    assert at(50, None) == 0.6  # never consolidated: no decay yet
    assert at(10, 10) == 0.6
    assert at(30, 10) == pytest.approx(0.6 * 0.988**20)
    assert at(5, 10) == 0.6  # counter reset: no negative age


def test_first_consolidation_stamps_the_epoch_in_state_and_never_rewrites(folder: Folder) -> None:
    path = folder.add(make_fact("The build uses make.", created=NOW - timedelta(days=2)))
    before = path.read_bytes()
    assert plan_lifecycle(folder.ctx(epoch=7)) == []  # nothing of meaning changes
    standing = rate(folder.ctx(epoch=7))[read_fact(path).id]
    assert standing.first_epoch == 7 and standing.heat is not None and standing.tier == "hot"
    # The next epochs rate it from its standing: decay without touching the file.
    later = rate(folder.ctx(epoch=20, standings={read_fact(path).id: standing}))
    assert later[read_fact(path).id].first_epoch == 7
    fact = read_fact(path)
    assert effective_importance(fact, epoch=20, first_epoch=7, accesses=0) < 0.5
    assert path.read_bytes() == before


# ---------------------------------------------------------------- the acceptance cases


def test_retires_expired_and_resolved_archives_trivial_and_spares_decisions(
    folder: Folder,
) -> None:
    last_year = NOW - timedelta(days=400)
    speculative = folder.add(
        make_fact(
            "Maybe the team moves to Rust.",
            confidence=0.3,
            created=NOW - timedelta(days=40),
            expires_at=NOW - timedelta(days=10),
        )
    )
    commitment = folder.add(
        make_fact(
            "I'll send the Q3 budget report to Dana by Friday.",
            category=Category.COMMITMENT,
            created=last_year,
            session="planning",
        )
    )
    done = folder.add(
        make_fact(
            "Sent the Q3 budget report to Dana.",
            kind=MemoryKind.EPISODE,
            created=last_year + timedelta(days=3),
            session="planning",
        )
    )
    moment = folder.add(
        make_fact(
            "We had coffee in the kitchen.",
            category=Category.MOMENT,
            kind=MemoryKind.EPISODE,
            importance=0.2,
            created=NOW - timedelta(days=200),
        )
    )
    decision = folder.add(
        make_fact(
            "We decided to keep the monolith.",
            category=Category.DECISION,
            importance=0.2,
            created=last_year,
        )
    )
    changes = plan_lifecycle(folder.ctx())
    by_source = {getattr(c, "path", None) or getattr(c, "source", None): c for c in changes}

    retired = by_source[speculative]
    assert isinstance(retired, FactUpdate) and retired.retires and retired.action == "retire"
    assert retired.after.status is Status.INVALIDATED
    assert "expired" in retired.after.status_history[-1].reason

    fulfilled = by_source[commitment]
    assert isinstance(fulfilled, FactUpdate) and fulfilled.retires
    assert fulfilled.after.status is Status.SUPERSEDED
    assert fulfilled.after.superseded_by == read_fact(done).id
    assert "resolved commitment" in fulfilled.after.status_history[-1].reason
    assert "done" in fulfilled.after.tags  # a plan carried out: recall keeps its sentence

    moved = by_source[moment]
    assert isinstance(moved, FactMove)
    rel = moment.relative_to(folder.layout.facts_dir)
    assert moved.target == folder.layout.archive_dir / "facts" / rel
    assert moved.after.status is Status.ARCHIVED
    assert moved.after.status_history[-1].to_status is Status.ARCHIVED

    kept = by_source.get(decision)
    assert kept is None or (isinstance(kept, FactUpdate) and not kept.retires)
    assert not any(isinstance(c, FactMove) and c.source == decision for c in changes)

    apply(changes)
    assert speculative.exists() and commitment.exists() and decision.exists()
    assert not moment.exists() and (folder.layout.archive_dir / "facts" / rel).exists()
    assert read_fact(speculative).status is Status.INVALIDATED
    assert read_fact(commitment).status_history[-1].from_status is Status.ACTIVE
    assert read_fact(decision).status is Status.ACTIVE
    # Idempotent: the applied folder plans nothing more, and the plan is deterministic.
    assert plan_lifecycle(folder.ctx()) == []


def test_archival_spares_recalled_corrections_protected_and_young(folder: Folder) -> None:
    old = NOW - timedelta(days=200)
    recalled = make_fact(
        "Lunch was at noon.", category=Category.MOMENT, importance=0.1, created=old
    )
    correction = make_fact(
        "Actually the meeting is at 3.", category=Category.CORRECTION, importance=0.1, created=old
    )
    pinned = make_fact(
        "The wiki lives on the old server.",
        importance=0.1,
        created=old,
        policy_class=PolicyClass.PROTECTED,
    )
    young = make_fact("Tea break happened.", category=Category.MOMENT, importance=0.1)
    for fact in (recalled, correction, pinned, young):
        folder.add(fact)
    ctx = folder.ctx(access={recalled.id: 3})
    changes = plan_lifecycle(ctx)
    assert not any(isinstance(c, FactMove) for c in changes)
    assert not any(isinstance(c, FactUpdate) and c.retires for c in changes)
    assert rate(ctx)[recalled.id].accesses == 3


def test_decay_over_epochs_archives_what_was_once_important(folder: Folder) -> None:
    fact = make_fact(
        "We chatted about the weather.",
        category=Category.MOMENT,
        kind=MemoryKind.EPISODE,
        importance=0.5,
        created=NOW - timedelta(days=120),
    )
    path = folder.add(fact)
    first = {fact.id: Standing(first_epoch=1)}
    assert not any(
        isinstance(c, FactMove) for c in plan_lifecycle(folder.ctx(epoch=2, standings=first))
    )
    # 0.5 * 0.98^40 = 0.22 < 0.3: forty consolidations later it sinks into the archive.
    later = plan_lifecycle(folder.ctx(epoch=41, standings=first))
    moves = [c for c in later if isinstance(c, FactMove)]
    assert [m.source for m in moves] == [path]


# ---------------------------------------------------------------- commitments


def test_commitment_resolution_needs_a_matching_later_completion() -> None:
    base = NOW - timedelta(days=200)
    promise = make_fact(
        "I will fix the login bug this week.", category=Category.COMMITMENT, created=base
    )
    unrelated = make_fact("Finished lunch early.", created=base + timedelta(hours=1))
    future = make_fact("The login bug will be fixed later.", created=base + timedelta(hours=2))
    earlier = make_fact("Fixed the login bug once before.", created=base - timedelta(days=1))
    elsewhere = make_fact(
        "Fixed the login bug.", created=base + timedelta(days=1), session="other-session"
    )
    assert resolved_commitments([promise, unrelated, future, earlier, elsewhere]) == {}
    # Another session counts when it is about the same entity.
    promise_e = promise.with_changes(entities=("project-auth",))
    elsewhere_e = elsewhere.with_changes(entities=("project-auth",))
    found = resolved_commitments([promise_e, elsewhere_e])
    assert found[promise.id].by == elsewhere.id


def test_a_shared_name_or_a_stretch_of_conversation_does_not_report_a_promise_done() -> None:
    base = NOW - timedelta(days=30)
    dana = ("person-dana",)
    posted = make_fact(
        "Dana will keep you posted.", category=Category.COMMITMENT, created=base, entities=dana
    )
    visit = make_fact(
        "Dana is going to visit the lighthouse museum this month.",
        category=Category.COMMITMENT,
        created=base,
        entities=dana,
    )
    # A note that names Dana and reports something else done.
    other_work = make_fact(
        "Dana finished painting the fence.", created=base + timedelta(days=1), entities=dana
    )

    def episode(text: str) -> Fact:
        return make_fact(
            text,
            category=Category.MOMENT,
            kind=MemoryKind.EPISODE,
            created=base + timedelta(days=2),
            entities=("person-dana", "person-sam"),
        )

    # A chunk of conversation that happens to say "done" and the museum.
    chat = episode(
        "Dana: I loved the lighthouse museum photos! Sam: I couldn't have done it without "
        "you, the museum trip was great."
    )
    # Doing in general is not a report, however many words it shares.
    advice = make_fact(
        "Getting the lighthouse museum visit done is the key to a good month, says Dana.",
        created=base + timedelta(days=2),
        entities=dana,
    )
    # An episode that says something was done and shares one word with the promise.
    quiz = episode("Sam: I finished the museum quiz at school today. Dana: nice one!")
    # Someone else's report of the same thing.
    sam_went = make_fact(
        "Sam visited the lighthouse museum, done at last.",
        created=base + timedelta(days=2),
        entities=("person-sam",),
    )
    assert resolved_commitments([posted, visit, other_work, chat, quiz, sam_went, advice]) == {}
    # A note that reports the promised thing done still resolves it.
    went = make_fact(
        "Dana visited the lighthouse museum with her kids, finally done.",
        created=base + timedelta(days=3),
        entities=dana,
    )
    found = resolved_commitments([posted, visit, other_work, chat, quiz, sam_went, advice, went])
    assert set(found) == {visit.id} and found[visit.id].by == went.id


def test_recently_resolved_and_tagged_commitments(folder: Folder) -> None:
    recent = make_fact(
        "I'll book the venue for the offsite.",
        category=Category.COMMITMENT,
        created=NOW - timedelta(days=20),
    )
    done = make_fact("Booked the venue for the offsite.", created=NOW - timedelta(days=10))
    tagged = make_fact(
        "I promised to review Ana's thesis.",
        category=Category.COMMITMENT,
        created=NOW - timedelta(days=300),
        tags=("fulfilled",),
    )
    open_one = make_fact(
        "I'll water the plants.", category=Category.COMMITMENT, created=NOW - timedelta(days=300)
    )
    for fact in (recent, done, tagged, open_one):
        folder.add(fact)
    retired = {c.before.id: c for c in plan_lifecycle(folder.ctx()) if isinstance(c, FactUpdate)}
    assert recent.id not in retired  # resolved 10 days ago: kept for now
    assert retired[tagged.id].retires and "tagged fulfilled" in retired[tagged.id].reason
    assert open_one.id not in retired  # unresolved commitments are never retired


# ---------------------------------------------------------------- states, tiers, accesses


def test_lifecycle_states_and_tiers(folder: Folder) -> None:
    fresh = make_fact("The API is versioned by date.", created=NOW - timedelta(hours=3))
    confirmed = make_fact(
        "The staging host is blue.", created=NOW - timedelta(hours=3), confirmations=2
    )
    disputed = make_fact("The office closes at 6.", verification_state=VerificationState.DISPUTED)
    faint = make_fact(
        "Someone may have mentioned a podcast.",
        confidence=0.45,
        importance=0.2,
        created=NOW - timedelta(days=200),
        category=Category.DECISION,  # protected: stays, but cools down
    )
    for fact in (fresh, confirmed, disputed, faint):
        folder.add(fact)
    assert plan_lifecycle(folder.ctx()) == []  # ratings are not meaning: no file changes
    after = rate(folder.ctx())
    assert after[fresh.id].lifecycle is LifecycleState.VALIDATED
    assert after[confirmed.id].lifecycle is LifecycleState.ACTIVE
    assert after[disputed.id].lifecycle is LifecycleState.STALE
    assert after[faint.id].lifecycle is LifecycleState.STALE
    assert after[faint.id].tier == "cold" and after[fresh.id].tier == "hot"
    for standing in after.values():
        assert standing.heat is not None and 0 <= standing.heat <= 1
        assert round(standing.heat * 20, 6) == round(standing.heat * 20)  # 0.05 steps
    # Rated again from its own standing, nothing moves: the rating is a fixed point.
    assert rate(folder.ctx(standings=after)) == after


def test_a_stale_fact_that_recovers_becomes_validated(folder: Folder) -> None:
    fact = make_fact("The API is versioned by date.", created=NOW - timedelta(hours=3))
    folder.add(fact)
    was = {fact.id: Standing(lifecycle=LifecycleState.STALE)}
    assert rate(folder.ctx(standings=was))[fact.id].lifecycle is LifecycleState.VALIDATED


def test_cold_fact_comes_back_when_recalled_a_lot(folder: Folder) -> None:
    fact = make_fact(
        "The VPN config is in the ops repo.", created=NOW - timedelta(days=30), importance=0.7
    )
    folder.add(fact)
    cold = {fact.id: Standing(tier="cold")}
    assert rate(folder.ctx(standings=cold))[fact.id].tier == "cold"
    busy = rate(folder.ctx(access={fact.id: 25}, standings=cold))
    assert busy[fact.id].tier == "hot"


def test_access_folding_is_counted_once_and_reaches_inactive_facts(folder: Folder) -> None:
    live = make_fact("Deploys happen on Tuesdays.")
    gone = make_fact("Deploys happen on Mondays.", status=Status.SUPERSEDED)
    folder.add(live)
    folder.add(gone)
    before = {path: path.read_bytes() for path, _ in folder.facts()}
    ctx = folder.ctx(access={live.id: 2, gone.id: 1, "unknown": 4})
    assert plan_lifecycle(ctx) == []  # recalls never change a file
    first = rate(ctx)
    assert first[gone.id].accesses == 1 and first[live.id].accesses == 2
    assert "unknown" not in first  # only facts the folder holds keep a standing
    # Once folded, the recalls are in the standings: nothing new, nothing more.
    assert rate(folder.ctx(standings=first)) == first
    again = rate(folder.ctx(access={live.id: 1}, standings=first))
    assert again[live.id].accesses == 3
    assert {path: path.read_bytes() for path, _ in folder.facts()} == before


def test_archived_facts_are_only_kept_consistent(folder: Folder) -> None:
    archived = make_fact("Old note.", status=Status.ARCHIVED, created=NOW - timedelta(days=300))
    target = folder.layout.archive_dir / "facts" / "2025-08-05" / "fact-old.md"
    write_fact(target, archived, fsync=False)
    assert plan_lifecycle(folder.ctx()) == []
    was = {archived.id: Standing(accesses=2, lifecycle=LifecycleState.STALE, heat=0.3)}
    standing = rate(folder.ctx(standings=was))[archived.id]
    assert standing == Standing(accesses=2, lifecycle=LifecycleState.ARCHIVED, heat=0.3)


def test_status_archived_by_hand_moves_the_file_under_archive(folder: Folder) -> None:
    fact = make_fact("Retired by a person.", status=Status.ARCHIVED)
    path = folder.add(fact)
    changes = plan_lifecycle(folder.ctx())
    assert len(changes) == 1 and isinstance(changes[0], FactMove)
    rel = path.relative_to(folder.layout.facts_dir)
    assert changes[0].target == folder.layout.archive_dir / "facts" / rel
    assert changes[0].after.status_history == ()  # the person's change, not ours
    apply(changes)
    assert plan_lifecycle(folder.ctx()) == []
    assert rate(folder.ctx())[fact.id].lifecycle is LifecycleState.ARCHIVED


def test_plan_is_deterministic(folder: Folder) -> None:
    for i in range(30):
        folder.add(
            make_fact(
                f"Fact number {i} about topic {i % 4}.",
                created=NOW - timedelta(days=7 * i),
                importance=(i % 10) / 10,
                category=[Category.FACT, Category.MOMENT, Category.SKILL][i % 3],
                confidence=[0.95, 0.75, 0.5, 0.3][i % 4],
            )
        )
    first = plan_lifecycle(folder.ctx(epoch=3))
    second = plan_lifecycle(folder.ctx(epoch=3))
    assert first == second and first
    assert any(isinstance(c, FactMove) for c in first)
    apply(first)
    assert plan_lifecycle(folder.ctx(epoch=3)) == []


def test_speculative_confidence_tier_constant() -> None:
    # The expiry rule relies on extraction giving speculative facts an expiresAt.
    assert confidence_tier(0.3) is ConfidenceTier.SPECULATIVE


# ---------------------------------------------------------------- an older version's counters


def test_counters_in_frontmatter_move_to_the_standings_once(folder: Folder) -> None:
    older = {
        "accessCount": 4,
        "firstEpoch": 3,
        "lifecycleState": "validated",
        "heatScore": 0.6,
        "decayScore": 0.25,
        "tier": "cold",
        "reviewer": "ana",  # a person's key
    }
    fact = make_fact("The office has a piano.", extra=older)
    odd = make_fact("The piano is out of tune.", extra={"tier": "gold", "accessCount": "many"})
    path = folder.add(fact)
    odd_path = folder.add(odd)
    taken = adopt_former({}, folder.facts())
    assert taken == {fact.id: Standing(4, 3, LifecycleState.VALIDATED, 0.6, 0.25, "cold")}
    # A run killed after state/ was written finds the files unchanged: taken in again, the
    # count is not doubled and the earlier epoch is kept.
    recalled = Standing(6, 3, LifecycleState.ACTIVE, 0.7, 0.2, "hot")
    assert adopt_former({fact.id: recalled}, folder.facts()) == {fact.id: recalled}
    changes = move_former_counters(folder.ctx())
    assert [(c.action, c.path) for c in changes] == [("migrate", path)]
    apply(changes)
    text = path.read_text(encoding="utf-8")
    for key in older:
        assert (f"\n{key}:" in text) is (key == "reviewer")
    assert "tier: gold" in odd_path.read_text(encoding="utf-8")  # not ours: a person's key
    assert move_former_counters(folder.ctx()) == []
    assert adopt_former({}, folder.facts()) == {}
