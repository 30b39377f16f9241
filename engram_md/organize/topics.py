"""Topics: the normalized terms that say what a fact is about.

Boxes say what they were about and traces decide which boxes continue each other by comparing
topic sets (:func:`subject_topics`); the folder's topic index files facts under them
(:func:`fact_topics`); the entity graph matches entities normalized the same way. Tags and
entity slugs come from different extractors (an LLM, the offline heuristics, a person editing
a file) and disagree on spelling: "PostgreSQL 16", "postgres", "tool-postgresql". Every term
therefore goes through one normalization so that those meet:

1. case-folded and slugged (letters and digits joined by hyphens);
2. an entity's type prefix dropped (``person-dana`` -> ``dana``), in :func:`entity_topic`;
3. version numbers dropped (``postgresql-16`` -> ``postgresql``): a version is not a topic;
4. each word mapped through the known aliases (``postgres`` -> ``postgresql``), else given a
   deliberately simple stemming (plurals, ``-ing``) so "deploys" and "deploy" meet;
5. the joined slug mapped through the aliases once more (``machine-learning`` -> ``ml``).

The stemming is crude on purpose: it only has to map two spellings of the same word to the
same key, and it is applied to both sides of every comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.models import Fact
from ..core.paths import safe_slug

# Type prefixes of entity slugs (``<type>-<name>``): the LLM prompt's types plus the offline
# extractor's ``entity``. The type says what kind of thing it is, not what the fact is about.
ENTITY_TYPE_PREFIXES = frozenset({"person", "org", "project", "tool", "place", "other", "entity"})
PERSON_PREFIX = "person"

# Spellings that name the same thing. Keys and values are already slugged and lowercase.
KNOWN_ALIASES: Mapping[str, str] = {
    "postgres": "postgresql",
    "psql": "postgresql",
    "pgsql": "postgresql",
    "mongo": "mongodb",
    "k8s": "kubernetes",
    "kube": "kubernetes",
    "js": "javascript",
    "ecmascript": "javascript",
    "ts": "typescript",
    "py": "python",
    "python3": "python",
    "golang": "go",
    "rustlang": "rust",
    "gh": "github",
    "gitlab-ci": "gitlab",
    "db": "database",
    "dbs": "database",
    "repo": "repository",
    "repos": "repository",
    "config": "configuration",
    "configs": "configuration",
    "env": "environment",
    "envs": "environment",
    "prod": "production",
    "dev": "development",
    "docs": "documentation",
    "doc": "documentation",
    "auth": "authentication",
    "ci-cd": "ci",
    "cicd": "ci",
    "machine-learning": "ml",
    "llms": "llm",
    "large-language-model": "llm",
    "aws-lambda": "lambda",
    "deployment": "deploy",
    "deployments": "deploy",
}

_KNOWN_TARGETS = frozenset(KNOWN_ALIASES.values())

# Word endings that look like a plural but are not one ("status", "analysis", "class").
_NOT_PLURAL = ("ss", "us", "is", "ics")


def _stem(word: str) -> str:
    """Plural and -ing endings off, conservatively: only long words, only regular endings."""
    if word.isdigit() or len(word) < 4:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(_NOT_PLURAL):
        return word[:-1]
    if word.endswith("ing") and len(word) >= 8:
        # Only a long stem: "deploying" -> "deploy", but "staging", "morning" and "string"
        # keep their ending (their stems would be other words, or none).
        stem = word[:-3]
        if stem[-1] == stem[-2] and stem[-1] not in "lsz":
            stem = stem[:-1]  # "programming" -> "program"; "installing" keeps its "ll"
        return stem
    return word


def _normalize(term: str, aliases: Mapping[str, str]) -> str:
    slug = safe_slug(term, fallback="")
    if not slug:
        return ""
    if slug in aliases:
        return aliases[slug]
    parts = [p for p in slug.split("-") if p and not p.isdigit()] or [slug]
    # A canonical name ("kubernetes") is final: stemming it would split it from its aliases.
    targets = _KNOWN_TARGETS if aliases is KNOWN_ALIASES else frozenset(aliases.values())
    words = [aliases.get(p) or (p if p in targets else _stem(p)) for p in parts]
    joined = "-".join(words)
    return aliases.get(joined, joined)


def normalize_topic(term: str) -> str:
    """The comparison key of one tag, entity name or word ("" when nothing is left)."""
    return _normalize(term, KNOWN_ALIASES)


def _merged_aliases(aliases: Mapping[str, str] | None) -> Mapping[str, str]:
    if not aliases:
        return KNOWN_ALIASES
    merged = dict(KNOWN_ALIASES)
    for key, value in aliases.items():
        # Both sides go through the built-in normalization so a caller may write either
        # spelling ("Postgres": "PostgreSQL") and still hit the same keys.
        k, v = safe_slug(key, fallback=""), _normalize(value, KNOWN_ALIASES)
        if k and v:
            merged[k] = v
    return merged


def entity_topic(entity: str, aliases: Mapping[str, str] | None = None) -> str:
    """An entity slug's topic: its type prefix dropped, the name normalized."""
    slug = safe_slug(entity, fallback="")
    kind, sep, name = slug.partition("-")
    if sep and name and kind in ENTITY_TYPE_PREFIXES:
        slug = name
    return _normalize(slug, _merged_aliases(aliases))


def subject_topics(fact: Fact, aliases: Mapping[str, str] | None = None) -> frozenset[str]:
    """What one fact is about: its tags and the things it names, not the people.

    Boxes and traces compare these. A category ("fact", "decision") says what kind of memory
    it is, and a person says who took part: the speakers are named by nearly every fact of
    their conversations, so with them every box would look like every other. Extractors name
    speakers and people talked about alike (``person-<name>``), so people are left out, also
    when a tag repeats the name.
    """
    table = _merged_aliases(aliases)
    people: set[str] = set()
    topics = {_normalize(tag, table) for tag in fact.tags}
    for entity in fact.entities:
        topic = entity_topic(entity, aliases)
        is_person = safe_slug(entity, fallback="").partition("-")[0] == PERSON_PREFIX
        (people if is_person else topics).add(topic)
    # A tag that is only the name of someone the fact names as a person is that person.
    topics -= people
    topics.discard("")
    return frozenset(topics)


def fact_topics(fact: Fact, aliases: Mapping[str, str] | None = None) -> frozenset[str]:
    """The keys the folder's topic index files a fact under: its subject topics, the people
    it names and its category."""
    topics = set(subject_topics(fact, aliases))
    topics.update(entity_topic(entity, aliases) for entity in fact.entities)
    topics.add(fact.category.value)
    topics.discard("")
    return frozenset(topics)


def topic_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """How much two topic sets share: |a ∩ b| / min(|a|, |b|), 0.0 when either is empty.

    The overlap coefficient rather than Jaccard: a new fact brings two or three topics and a
    box holds many, so Jaccard would call almost every fact a topic shift once a box has
    grown. Asking "how much of the smaller side does the other one cover" keeps a box open
    while new facts stay on its subjects, whatever its size.
    """
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))
