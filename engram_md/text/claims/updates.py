"""Updates: the claims of a statement (:func:`claims`), whether a newer statement's claims
replace an older one's (:func:`update_between`), and the :class:`ClaimBook` that finds, by
holder, the earlier statements a new one may update."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime

import regex

from .attributes import _attributes
from .changes import (
    _NOT_A_SHIFT,
    _SHIFT,
    _alternatives,
    _change_claims,
    _frames,
    _of_the_thing,
    _theirs,
)
from .clauses import (
    _CAUSATIVE,
    _EVENT,
    _HAS,
    _INTENT,
    _LABEL,
    _PAST,
    _SECOND_LABEL,
    _TODO,
    _TOLD,
    _VOCATIVE,
    _WONDER,
    _WOULD,
    _clauses,
    _is_other,
    _without_speaker_label,
    without_asides,
)
from .endings import _DONE, _GETTING, _LOSS, _ON_LEAVE, _STUDENT
from .slots import (
    _MOVED_ON,
    FEWER,
    SOME,
    Claim,
    _relationship,
    _relocation,
    _state_claims,
)
from .words import _ADVERB, _APOS, _I, _NAME, _stem, pattern, salient


def claims(text: str, holder: str = "") -> tuple[Claim, ...]:
    """The claims of a statement whose speaker is ``holder`` (their name, casefolded)."""
    holder = holder.casefold()
    out: list[Claim] = []
    if _SECOND_LABEL.search(_LABEL.sub("", text, count=1)):
        return ()  # an exchange, not one person's statement
    own: list[str] = []  # the clauses that say something of the holder, plainly
    shifted = False
    for clause in _clauses(_without_speaker_label(text)):
        if _WONDER.search(clause) or _WOULD.search(clause) and not _INTENT.search(clause):
            continue
        who = "other" if _is_other(clause, holder) else holder
        if who == "other" and holder and not _WONDER.search(clause):
            out.extend(_theirs(clause, holder, changed=not _NOT_A_SHIFT.search(text)))
        if who == holder and not _INTENT.search(clause) and not _PAST.search(clause):
            own.append(clause)
            shifted = shifted or _SHIFT.search(clause) is not None
        done_here = _DONE.search(clause) and not _CAUSATIVE.search(clause)
        if _INTENT.search(clause) and not done_here and not _TOLD(clause):
            todo = frozenset(_stem(m.group("verb")) for m in _TODO.finditer(clause))
            out.append(Claim(who, "plan", salient(clause, holder.split()), core=todo, said=clause))
            out.extend(_relationship(clause, who, holder))  # "my partner and I are planning…"
            # a decision that turns another around: "we went with green in the end"
            out.extend(c for c in _change_claims(clause, who, holder, text) if c.slot == "changed")
            continue
        for m in _LOSS.finditer(clause):
            if holder and m.group("v").casefold() not in (holder, "i", "we"):
                name = frozenset({_stem(m.group("v"))})
                out.append(Claim(holder, "ended", name, ended=True, core=name, said=m.group(0)))
        if _PAST.search(clause):
            continue
        if who == holder and not done_here:
            out.extend(_under_way(clause, who, holder))
        out.extend(_state_claims(clause, who, holder))
        out.extend(_change_claims(clause, who, holder, text))
        if _ON_LEAVE.search(clause):  # "off work with stress" ends when "back at work"
            out.append(Claim(who, "has", frozenset({_stem("leave")}), said=clause))
        if _HAS.search(clause) or not _EVENT.search(clause):
            out.append(Claim(who, "has", salient(clause, holder.split()), said=clause))
    if not any(c.slot == "residence" for c in out):
        out.extend(_relocation(text, holder))
    # "new job!", "got promoted", "we moved house": the slot changed, its value unsaid
    body = " ".join(own)
    moved_on = {
        slot
        for slot, said in _MOVED_ON.items()
        if said.search(body) and not any(c.slot == slot for c in out)
    }
    if moved_on and not _NOT_A_SHIFT.search(text):
        out.append(Claim(holder, "moved on", frozenset(moved_on)))
    if not _NOT_A_SHIFT.search(text):
        out.extend(_attributes(own, holder, changed=shifted))
    if shifted and not _NOT_A_SHIFT.search(text):
        # What changed is named in the clause that says so, or by name beside it in its
        # sentence ("I've moved over to Vivaldi, Chrome kept freezing").
        said: list[str] = []
        joined: list[str] = []
        for clause in own:
            parts = _JOINED.split(clause)
            said.extend(part for part in parts if _SHIFT.search(part))
            if len(parts) > 1:
                joined.extend(part for part in parts if not _SHIFT.search(part))
        beside = without_asides(text)  # names anywhere in it: "called Eustace … back in touch now"
        for part in joined:  # but not in a clause joined to the change with a subject of its own
            beside = beside.replace(part, " ")
        names = _NAME.findall(_VOCATIVE.sub("", beside))
        words = _ADVERB.sub("", _VOCATIVE.sub("", " ".join([*said, *names])))
        value = salient(words, holder.split())
        if value or _alternatives(words):
            out.append(Claim(holder, "shift", value, said=words))
    return tuple(dict.fromkeys(out))


# Work under way: "I'm building a canoe", "we're retiling the bathroom". Not a state of
# the holder's ("living in", "working at", "dating"), which has a slot of its own and is not
# finished by being done.
_UNDER_WAY = regex.compile(
    rf"\b(?:(?:(?:i|we)(?:{_APOS}m|{_APOS}re|\s+am|\s+are)|(?P<name>(?-i:[A-Z])\w+)(?:{_APOS}s\s+\w+)?"
    r"\s+is)\s+"
    r"(?:(?:currently|still|slowly|busy|"
    r"halfway\s+through)\s+)?(?P<verb>\p{L}{3,}ing)\b(?!\s+(?:at|for|with|in|as|from|to|on)\b))",
    _I,
)
_NOT_WORK = frozenset(
    _stem(w)
    for w in """living staying working dating seeing renting using running going doing getting
    having feeling thinking trying looking waiting hoping sitting sleeping eating drinking
    loving enjoying watching playing""".split()
)


def _under_way(clause: str, who: str, holder: str) -> Iterator[Claim]:
    """A piece of work the holder is doing, which a later "done" can finish like a plan."""
    m = _UNDER_WAY.search(clause)
    if m is None or m.group("name") and m.group("name").casefold() != holder:
        return  # "Sarah is building a canoe" is Sarah's work
    verb = _stem(m.group("verb"))
    if verb in _NOT_WORK:
        return
    value = salient(clause, holder.split())
    if len(value - {verb}) >= 1:
        yield Claim(who, "plan", value, core=frozenset({verb}), said=clause)


# "They had a bath and the whole room is grey now": a second clause with a subject of its
# own, whose change is not of what the first one names.
_JOINED = regex.compile(r"\s+and\s+(?=(?:the|this|that|it|they|he|she)\b)", _I)


# ---------------------------------------------------------------- deciding


_STATES = ("residence", "employer", "role", "relationship", "diet")
# Kinds of workplace: "the city archive" and "the county archive" are two employers.
_ORG_NOUNS = frozenset(
    _stem(w)
    for w in """school library company firm agency store shop hospital clinic team group office
    department startup bank studio lab restaurant cafe council
    ministry""".split()
)


# What a change said in general words can replace: how things stand, and what was liked.
_SHIFTABLE = frozenset({*_STATES, "has", "like", "dislike", "theirs"})


def update_between(old: tuple[Claim, ...], new: tuple[Claim, ...]) -> str | None:
    """Why the newer statement's claims replace the older one's, or None (package docstring)."""
    for n in new:
        if n.holder == "other":
            continue
        for o in old:
            if o.holder != n.holder:
                continue
            reason = _replaces(o, n)
            if reason is not None:
                return reason
    return None


# A plan carried out is no longer current, but what was said of it stays true: its words
# stay recallable (a superseded fact tagged DONE_TAG keeps its sentence in recall).
_DONE_PREFIX = "done: "
DONE_TAG = "done"


def carried_out(reason: str) -> bool:
    """Whether an update's reason says the older statement's plan was carried out."""
    return reason.startswith(_DONE_PREFIX)


def _replaces(o: Claim, n: Claim) -> str | None:
    if o.slot in _STATES and n.slot == o.slot:
        ov, nv = o.value - _ORG_NOUNS, n.value - _ORG_NOUNS
        if o.slot == "role":  # "staff nurse" → "charge nurse": a new title, sharing a word
            if _abbreviates(o.said, n.said) or _abbreviates(n.said, o.said):
                return None  # "product manager", then "PM": the same title, shortened
            ov, nv = o.value, n.value
            changed = bool(ov and nv) and not (ov <= nv or nv <= ov)
            changed = changed or bool(n.core and ov and nv and ov != nv)
        else:
            changed = bool(ov and nv) and not (ov & nv)
        return f"{o.slot}: {_show(o)} → {_show(n)}" if changed else None
    if o.slot.startswith("count:") and n.slot == o.slot and o.number != n.number:
        if n.number == SOME and o.number != 0 or o.number in (SOME, FEWER):
            return None
        if n.number == FEWER and not (o.number and o.number > 0):
            return None
        shown = {SOME: "some", FEWER: "fewer"}.get(n.number or 0, n.number)
        return f"{o.slot[6:]} count: {o.number} → {shown}"
    stems = o.value | {_stem(v) for v in o.value} if o.slot in _STATES else o.value
    if n.slot == "ended" and o.slot in (*_STATES, "plan", "like", "has") and n.core & stems:
        return f"no longer {_show(n)}"
    if o.slot == "plan" and n.slot == "done" and _shares_work(o, n.value):
        return f"{_DONE_PREFIX}{_show(o)}"
    # the same thing, not one that shares a word: "hospital soup" is not "my mum's soup"
    if o.slot == "like" and n.slot == "dislike" and n.value and n.value <= o.value:
        return f"now dislikes {_show(n)}"
    if o.slot == "dislike" and n.slot == "like" and n.value and n.value <= o.value:
        return f"now likes {_show(n)}"
    if o.slot == "problem" and n.slot == "resolved" and o.value & n.value:
        return f"put right: {' '.join(sorted(o.value & n.value))}"
    if o.slot == "seeking" and n.slot == "found" and o.value & n.value:
        return f"found: {_show(o)}"
    if o.slot == "ill" and n.slot == "recovered":
        return f"recovered: {_show(o)}"
    if o.slot == "plan" and n.slot == "arrived" and o.core & _GETTING:
        things = salient(_DOING.sub("", o.said)) - o.core if o.said else o.value - o.core
        if things & n.value:  # "renew my passport", then "the new passport arrived"
            return f"{_DONE_PREFIX}{_show(o)}"
    if o.slot == "plan" and n.slot == "did" and o.core & n.core:
        things = salient(_DOING.sub("", o.said)) - o.core if o.said else o.value - o.core
        if things & n.value:  # the work's own verb, done to the same thing
            return f"{_DONE_PREFIX}{_show(o)}"
    if o.slot == "theirs" and n.slot == "their end" and o.core & n.core and o.value & n.value:
        return f"no longer: {_show(o)}"
    if o.slot == "theirs" and n.slot == "their change" and o.core & n.core and n.value - o.value:
        return f"changed: {_show(o)}"
    if o.slot == "jobless" and (
        n.slot in ("employed", "employer") or n.slot == "moved on" and "employer" in n.value
    ):
        return "back in work"
    if o.slot.startswith("attr:") and n.slot == o.slot and n.core:
        numbers = {v for v in o.value if v.isdigit()}, {v for v in n.value if v.isdigit()}
        if (all(numbers) and numbers[0] != numbers[1]) or not o.value & n.value:
            return f"{o.slot[5:]}: {_show(o)} → {_show(n)}"
    if n.slot == "moved on" and o.slot in n.value:
        return f"new {o.slot}: no longer {_show(o)}"
    if n.slot == "jobless" and o.slot in ("employer", "role"):
        return f"no longer works: {_show(o)}"
    if n.slot == "graduated" and o.slot == "role" and o.value & _STUDENT:
        return f"no longer a student: {_show(o)}"
    if n.slot == "shift" and o.slot in _SHIFTABLE:
        # What the earlier statement is about, not what it was doing ("keep dreaming").
        things = (
            salient(_DOING.sub("", o.said), o.holder.split())
            if o.slot == "has" and o.said
            else o.value
        )
        if o.slot == "theirs":
            things = o.core  # said of the same person
        if things & n.value and not _of_the_thing(n.said, things, n.holder):
            return f"changed: {' '.join(sorted(things & n.value))}"
        if o.slot == "has" and o.said and n.said:
            same = _frames(o.said, o.holder) & _frames(n.said, n.holder)
            if same:  # "I drive a Volvo" → "I drive a Kona now"
                return f"changed: what {o.holder} {'/'.join(sorted(same))}"
        if o.said and n.said:
            was, now = _alternatives(o.said), _alternatives(n.said)
            for kind, words in now.items():
                if kind in was and words - was[kind]:
                    return f"{kind}: {'/'.join(sorted(was[kind]))} → {'/'.join(sorted(words))}"
    if o.slot == "plan" and n.slot == "shift" and _shares_work(o, n.value, least=2):
        return f"{_DONE_PREFIX}{_show(o)}"  # "migrate to GitLab" → "everything's on GitLab now"
    if o.slot == "plan" and n.slot == "change" and _shares_work(o, n.value):
        return f"plan changed: {_show(o)}"
    if o.slot == "plan" and n.slot == "changed" and o.value & n.value:
        return f"plan changed: {_show(o)}"
    return None


_DOING = regex.compile(r"\b\p{L}+ing\b", _I)


def _abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` is the initials of ``long``'s last words: "PM" of "product manager",
    "SRE" of "site reliability engineer"."""
    short = short.strip().casefold()
    words = [
        w for w in pattern(r"[\p{L}]+", 0).findall(long.casefold()) if w not in ("a", "an", "the")
    ]
    if not 2 <= len(short) <= 4 or not short.isalpha() or len(words) < len(short):
        return False
    return "".join(w[0] for w in words[-len(short) :]) == short


def _shares_work(plan: Claim, done: frozenset[str], *, least: int = 1) -> bool:
    """What the work is about, shared: at least one word and half of the plan's shorter list."""
    shared = plan.value & done
    if len(shared) < max(least, 1) or len(shared) * 2 < min(len(plan.value), 4):
        return False
    # The doing alone is not the work: "finish fixing the gate" is not done by "finished
    # fixing my bike"; what is fixed must be shared too.
    things = salient(_DOING.sub("", plan.said)) if plan.said else plan.value
    return bool(shared & things) or not things


def _show(claim: Claim) -> str:
    return claim.said or " ".join(sorted(claim.value))


# ---------------------------------------------------------------- finding earlier statements


_LOOSE = "changed: "  # the reason of a change said in general words (a "shift")
MAX_LOOSE = 2


# Which earlier claims a later one may replace, by slot: the pairs :func:`_replaces` has a
# rule for. A new statement is compared only with earlier ones holding such a claim, so a
# holder's thousands of statements are not each compared with every new one (a first
# consolidation of 100k facts spent most of its time on such pairs). Keep in step with
# _replaces: tests/test_claim_book.py checks every pair it replaces is found this way.
_REPLACEABLE: dict[str, frozenset[str]] = {
    **{slot: frozenset({slot}) for slot in _STATES},
    "employer": frozenset({"employer", "jobless"}),
    "employed": frozenset({"jobless"}),
    "ended": frozenset({*_STATES, "plan", "like", "has"}),
    **{slot: frozenset({"plan"}) for slot in ("done", "arrived", "did", "change", "changed")},
    "like": frozenset({"dislike"}),
    "dislike": frozenset({"like"}),
    "resolved": frozenset({"problem"}),
    "found": frozenset({"seeking"}),
    "recovered": frozenset({"ill"}),
    "their end": frozenset({"theirs"}),
    "their change": frozenset({"theirs"}),
    "jobless": frozenset({"employer", "role"}),
    "graduated": frozenset({"role"}),
    "shift": frozenset({*_SHIFTABLE, "plan"}),
}
_SAME_SLOT = ("count:", "attr:")  # a count or an attribute is replaced by its own kind only


def _replaceable(new: Claim) -> frozenset[str]:
    """The slots of earlier claims that ``new`` may replace."""
    if new.slot.startswith(_SAME_SLOT):
        return frozenset({new.slot})
    if new.slot == "moved on":  # its value names the slots that changed
        return frozenset({*new.value, "jobless"})
    return _REPLACEABLE.get(new.slot, frozenset())


def _replacing(old_slot: str) -> frozenset[str]:
    """The slots of later claims that may replace an earlier claim of ``old_slot``."""
    if old_slot.startswith(_SAME_SLOT):
        return frozenset({old_slot, "moved on"})
    return _REPLACING.get(old_slot, frozenset({"moved on"}))


_REPLACING: dict[str, frozenset[str]] = {
    old: frozenset({new for new, olds in _REPLACEABLE.items() if old in olds} | {"moved on"})
    for old in {slot for olds in _REPLACEABLE.values() for slot in olds}
}

# Slots whose replacement always shares a word with them (a plan is done by a statement
# naming its work, a like turns into a dislike of the same thing): such pairs are found by
# word, in both directions, since these slots are most of what a person says.
_BY_WORD = frozenset({"has", "plan", "like", "dislike", "problem", "seeking"})
# The slots of the claims that replace them ("moved on" names slots, not words: it is not).
_REPLACING_BY_WORD = frozenset(slot for slot, olds in _REPLACEABLE.items() if olds & _BY_WORD) - {
    "moved on"
}


def _words_of_old(claim: Claim) -> frozenset[str]:
    """Every word by which a later claim may replace ``claim`` (a slot of _BY_WORD): its value,
    the things its words name, and the verbs and kinds of value a change in general words
    compares (the "shift" rule of _replaces)."""
    words = set(claim.value)
    if claim.said:
        words |= salient(_DOING.sub("", claim.said))
        words |= {f"kind:{kind}" for kind in _alternatives(claim.said)}
        if claim.slot == "has":
            words |= {f"frame:{verb}" for verb in _frames(claim.said, claim.holder)}
    return frozenset(words)


def _words_of_new(claim: Claim) -> frozenset[str]:
    """The words by which ``claim`` replaces an earlier claim of a _BY_WORD slot."""
    words = set(claim.value | claim.core)
    if claim.slot == "shift" and claim.said:
        words |= {f"kind:{kind}" for kind in _alternatives(claim.said)}
        words |= {f"frame:{verb}" for verb in _frames(claim.said, claim.holder)}
    return frozenset(words)


_Said = tuple[tuple[Claim, ...], datetime]
_OLD, _NEW = "as older", "as newer"  # which side of a pair a word index serves
_SIDES = ((_OLD, _BY_WORD, _words_of_old), (_NEW, _REPLACING_BY_WORD, _words_of_new))


class ClaimBook:
    """Active statements by holder and slot, so a new statement finds the ones it may update
    (and, for one said earlier than some stored ones, those that update it) in dictionary
    lookups instead of a comparison with every statement of the holder. Each is kept with
    when it was said: only an earlier statement can be updated by a later one."""

    def __init__(self) -> None:
        self._said: dict[str, _Said] = {}
        # holder -> slot -> ids of the statements with a claim of that slot (in insertion order)
        self._by_slot: dict[str, dict[str, dict[str, None]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        # (side, holder, slot) -> word -> ids: the claims of a slot found by word, built the
        # first time a lookup needs them and kept up to date after
        self._by_word: dict[tuple[str, str, str], dict[str, set[str]]] = {}

    def __len__(self) -> int:
        return len(self._said)

    def add(self, fact_id: str, stated: tuple[Claim, ...], said_at: datetime) -> None:
        if not any(c.holder != "other" for c in stated):
            return
        self.remove(fact_id)
        self._said[fact_id] = (stated, said_at)
        for claim in stated:
            if claim.holder != "other":
                self._by_slot[claim.holder][claim.slot][fact_id] = None
                self._index_words(fact_id, claim, add=True)

    def remove(self, fact_id: str) -> None:
        entry = self._said.pop(fact_id, None)
        if entry is None:
            return
        for claim in entry[0]:
            if claim.holder == "other":
                continue
            slots = self._by_slot.get(claim.holder)
            if slots is not None and claim.slot in slots:
                slots[claim.slot].pop(fact_id, None)
                if not slots[claim.slot]:
                    del slots[claim.slot]
            self._index_words(fact_id, claim, add=False)

    def _index_words(self, fact_id: str, claim: Claim, *, add: bool) -> None:
        for side, slots, words_of in _SIDES:
            index = self._by_word.get((side, claim.holder, claim.slot))
            if index is None or claim.slot not in slots:
                continue
            for word in words_of(claim):
                if add:
                    index.setdefault(word, set()).add(fact_id)
                elif word in index:
                    index[word].discard(fact_id)

    def _by_words(self, side: str, holder: str, slot: str, words: frozenset[str]) -> set[str]:
        """The ids of the statements whose claims of ``slot`` share one of ``words``."""
        index = self._by_word.get((side, holder, slot))
        if index is None:
            index = self._by_word[(side, holder, slot)] = {}
            words_of = _words_of_old if side == _OLD else _words_of_new
            for fact_id in self._by_slot.get(holder, {}).get(slot, {}):
                for claim in self._said[fact_id][0]:
                    if claim.holder == holder and claim.slot == slot:
                        for word in words_of(claim):
                            index.setdefault(word, set()).add(fact_id)
        found: set[str] = set()
        for word in words:
            found.update(index.get(word, ()))
        return found

    def earlier_candidates(self, fact_id: str, stated: tuple[Claim, ...]) -> dict[str, _Said]:
        """The other statements ``stated`` may update: those holding a claim of a slot one
        of its claims can replace, of the same holder (and sharing a word where the rule
        needs one). A superset of what :func:`update_between` replaces, never less."""
        ids: set[str] = set()
        for new in stated:
            if new.holder == "other" or new.holder not in self._by_slot:
                continue
            slots = self._by_slot[new.holder]
            for slot in _replaceable(new):
                if slot not in slots:
                    continue
                if slot in _BY_WORD and new.slot in _REPLACING_BY_WORD:
                    ids |= self._by_words(_OLD, new.holder, slot, _words_of_new(new))
                else:
                    ids.update(slots[slot])
        ids.discard(fact_id)
        return {other: self._said[other] for other in ids}

    def later_candidates(self, fact_id: str, stated: tuple[Claim, ...]) -> dict[str, _Said]:
        """The other statements that may update ``stated``: those holding a claim of a slot
        that can replace one of its claims, of the same holder (and sharing a word where the
        rule needs one). A superset of what :func:`update_between` replaces, never less."""
        ids: set[str] = set()
        for old in stated:
            if old.holder == "other" or old.holder not in self._by_slot:
                continue
            slots = self._by_slot[old.holder]
            for slot in _replacing(old.slot):
                if slot not in slots:
                    continue
                if old.slot in _BY_WORD and slot in _REPLACING_BY_WORD:
                    ids |= self._by_words(_NEW, old.holder, slot, _words_of_old(old))
                else:
                    ids.update(slots[slot])
        ids.discard(fact_id)
        return {other: self._said[other] for other in ids}

    def updated_by(
        self, fact_id: str, stated: tuple[Claim, ...], said_at: datetime
    ) -> list[tuple[str, str]]:
        """(older id, reason) for each earlier statement that ``stated`` updates."""
        found = []
        for other_id, (other, other_at) in sorted(self.earlier_candidates(fact_id, stated).items()):
            if other_at > said_at:
                continue  # a later statement is not undone by an earlier one said late
            reason = update_between(other, stated)
            if reason is not None:
                found.append((other_id, reason))
        # A change said in general words replaces one earlier statement, or two; one that
        # would replace many is about a whole topic of the holder's ("now my dance studio …"),
        # not an update of any of them.
        loose = [item for item in found if item[1].startswith(_LOOSE)]
        if len(loose) > MAX_LOOSE:
            found = [item for item in found if not item[1].startswith(_LOOSE)]
        return found


def default_holder(entities: Iterable[str]) -> str:
    """Who "the user" of a statement is: the first person it names (``person-dana-lee`` →
    ``dana lee``), as the extractor lists the speaker first."""
    for entity in entities:
        kind, _, slug = entity.partition("-")
        if kind == "person" and slug:
            return slug.replace("-", " ")
    return ""


def fact_claims(content: str, entities: Iterable[str]) -> tuple[Claim, ...]:
    """The claims of a stored statement."""
    return claims(content, default_holder(entities))


def claims_of(statements: list[tuple[str, tuple[str, ...]]]) -> list[tuple[Claim, ...]]:
    """:func:`fact_claims` of many (content, entities) statements, for a worker process."""
    return [fact_claims(content, entities) for content, entities in statements]


def states_something(text: str) -> bool:
    """Whether a sentence says how someone's life stands (where they live or work, their
    role, relationship, diet, how many of something): worth keeping as a fact, since a later
    statement may update it."""
    return any(c.slot in _STATES or c.slot.startswith("count:") for c in claims(text))


def tells_event(text: str) -> bool:
    """Whether a statement tells of something that happened -- "I lost my job last month",
    "we went to Lisbon in May" -- which stays true as history once the state it brought
    about has changed ("back at work now"). How things stand ("I live in Berlin", "I love
    my studio"), what is wondered or intended ("if we moved…", "I'm gonna start a
    business") and a feeling said with a participle ("I'm so determined") tell of none."""
    for clause in _clauses(_FELT.sub(" feels ", _without_speaker_label(text))):
        if _WONDER.search(clause) or _WOULD.search(clause) and not _INTENT.search(clause):
            continue
        if _INTENT.search(clause) and not _TOLD(clause):
            continue
        if _PAST.search(clause) or _TOLD(clause):
            return True
        if not _HAS.search(clause) and _EVENT.search(clause):
            return True
    return False


# "I'm so determined", "she seems tired": a participle that says how someone is, not what
# happened to them.
_FELT = regex.compile(
    rf"\b(?:i{_APOS}m|i\s+am|we{_APOS}re|you{_APOS}re|they{_APOS}re|(?:s?he|it){_APOS}s|am|is|are|"
    r"feel|feels|feeling|seem|seems|look|looks|get|gets|getting)\s+(?:\w+ly\s+|so\s+|very\s+|"
    r"too\s+|quite\s+|pretty\s+|super\s+)?\w+ed\b",
    _I,
)


def update_reason(old_text: str, new_text: str, old_holder: str, new_holder: str) -> str | None:
    """Why the newer statement replaces the older one, or None when it does not."""
    return update_between(claims(old_text, old_holder), claims(new_text, new_holder))
