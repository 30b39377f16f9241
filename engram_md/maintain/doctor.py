"""`engram-md doctor`: check that the folder, the index, the hashes, the graph and the boxes
agree, and (``--repair``) make them agree again.

The folder is the truth, so a repair always moves the derived side towards the files: rows,
hash entries, graph nodes and box links that name a fact no file holds are dropped, files the
index lacks are indexed, stale rows re-read, and a fact is linked into the graph and its box
the way the structure stage would have linked it. The one exception is a tombstone: the
forget it records is finished (:func:`engram_md.maintain.forget.forget`), file included. Two
things are never changed, only reported: a fact file that cannot be read (a person has to fix
it; everything derived from it is kept while an id can still be read out of it) and two files
claiming one id.

Each repair goes through the store that owns the data (:mod:`engram_md.maintain.repairs`);
the checks are in :mod:`engram_md.maintain.checks`, the report values in
:mod:`engram_md.maintain.problems`.

What is checked, by problem kind:

* ``temp_file`` — a ``.<name>.tmp-<pid>`` left in ``memory/`` or ``state/`` by a killed
  writer (one whose process still runs while it holds the writer lock is a write in flight,
  not an orphan).
* ``unreadable_fact``, ``duplicate_id`` — reported only.
* ``index_missing``, ``index_outdated`` (built for another model or row layout),
  ``index_unreadable`` (the table cannot be opened: a kill -9 while it was being created, a
  damaged manifest), ``index_incomplete`` (no text or id index: a kill between creating the
  table and its indices),
  ``index_row_orphan`` (no file, or an unreadable one), ``index_row_missing``,
  ``index_row_stale`` (the file says something else now: its statement, a field, its path;
  an mtime changed alone, as by a git checkout or a ``touch``, is no problem), and the same
  three for box rows.
* ``hashes_missing``, ``hash_entry_orphan`` (names a missing file, or one that now says
  something else), ``hash_entry_missing`` (a file's statement is not in the hash index).
* ``graph_node_orphan``, ``graph_edge_orphan`` — naming a fact no file holds;
  ``graph_edge_dangling`` — an edge between facts that exist, one of which is no graph node
  (a crash between a link's edge lines and its node line); ``graph_node_missing`` — with the
  graph enabled, an active live fact the pipeline wrote (source ``extraction`` or
  ``offline``) that is no graph node: the pipeline links every fact it writes, while facts a
  person or consolidation wrote, and retired or archived ones, need not be in the graph.
* ``unreadable_box`` (reported only), ``box_member_missing`` (a sealed or open box lists a
  missing fact), ``fact_box_missing`` (a fact's ``boxId`` names no box file and no open box),
  ``box_membership_mismatch`` (a fact's ``boxId`` names a box that does not list it),
  ``trace_box_missing`` (``traces.json`` lists a box without a file).
* ``forget_unfinished`` — a tombstone in ``state/forgotten.jsonl`` whose fact still has a
  file, an index row, a graph node or a place in a box: a forget that was interrupted.
* ``torn_line`` — a jsonl file in ``state/`` whose last line was cut short by a crash.

Both receive opened parts from the composition root. :func:`examine` only reads (a reader's
parts hold no lock, so it also works beside a running daemon, whose writes in flight may then
show up). :func:`repair` runs on a writer's parts — the lock is refused while the daemon runs
— repairs, and examines again: what is gone is reported as repaired, what is left stays a
problem.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..index.opened import FolderParts
from .checks import Exam, writer_active
from .forget import forget
from .problems import REPORT_ONLY, DoctorReport, Problem
from .repairs import fix


def examine(parts: FolderParts) -> DoctorReport:
    """Every disagreement between the folder and what is derived from it. Read-only."""
    active = writer_active(parts.layout)
    exam = Exam(parts)
    exam.run(writer_active=active)
    notes = list(exam.notes)
    if active:
        notes.append("a writer (the daemon) holds the folder: writes in flight may show up here")
    return DoctorReport(exam.problems, [], active, notes)


def repair(parts: FolderParts, *, found: Sequence[Problem] | None = None) -> DoctorReport:
    """Examine, repair what can be repaired, examine again, on a writer's ``parts``.

    ``found``: what :func:`examine` reported before these parts were opened. Opening them
    for writing already does part of the work (temp files swept, an index that cannot be
    used set aside and created anew), so what the report calls repaired is measured against
    that; without it, against what this repair finds at its start.
    """
    if not parts.writer:
        raise ValueError("a repair writes: it needs a writer's parts")
    before = Exam(parts)
    before.run(writer_active=False)
    reported = list(before.problems if found is None else found)
    current = before
    if before.unfinished:
        # Running a forget again is how it is finished: every step is idempotent, and once
        # a file is gone its tombstone stands in for it. That changes much of the folder,
        # which is then examined again.
        forget(
            parts,
            before.unfinished,
            reason="finishing an interrupted forget",
            by="engram-md doctor",
        )
        current = Exam(parts)
        current.run(writer_active=False)
        reported = [*current.problems, *reported]
    notes = list(current.notes) + fix(parts, current)
    after = Exam(parts)
    after.run(writer_active=False)
    left = {p.key for p in after.problems}
    seen = list({p.key: p for p in reported}.values())
    repaired = [p for p in seen if p.key not in left and p.kind not in REPORT_ONLY]
    return DoctorReport(after.problems, repaired, False, list(dict.fromkeys(notes + after.notes)))
