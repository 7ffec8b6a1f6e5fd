"""Supersession (:mod:`projections.queries.supersession`): a turn a later statement superseded is demoted and
labelled, and the turns of the version in force take its place.

After the learned ranker and the learning loop's adjustments: a superseded row's score is multiplied by
``supersession_factor`` and its breakdown says by what and when (``superseded``: the label,
``superseded_by``: the turns of the version in force, ``superseded_by_note``: that version's id); each turn of the
version in force, when the search's scope and time allow it, is lifted to at least the superseded row's score
before demotion (added when no list had found it) and names the turn it replaces (``supersedes``). With ``now``
before the change nothing is superseded yet; ``scope`` archive/all still returns the superseded turns, labelled.
"""

from __future__ import annotations

from projections.queries.scoring import Scoring, Stage
from projections.queries.supersession import superseded_turns


def apply(s: Scoring) -> None:
    index = superseded_turns(s.memory.notes, s.now, s.memory.messages.by_id)
    if not index:
        return
    factor, rows = s.config.supersession_factor, s.rows
    by_id = {row[2]: row for row in rows}
    by_msg = s.memory.messages.by_id
    for row in list(rows):
        change = index.get(row[2])
        if change is None:
            continue
        score = row[0]
        row[0] = score * factor
        row[3].update(superseded=change.label, superseded_by=list(change.current_sources),
                      supersession_factor=factor)
        if change.current_note_id:
            row[3]["superseded_by_note"] = change.current_note_id
        for memory_id in change.current_sources:
            if memory_id in index or memory_id not in by_msg or not s.allowed(memory_id):
                continue
            lifted = by_id.get(memory_id)
            if lifted is None:
                lifted = by_id[memory_id] = [0.0, -by_msg[memory_id].seq, memory_id, {"rrf": 0.0}]
                rows.append(lifted)
            lifted[0] = max(lifted[0], score)
            lifted[3]["supersedes"] = row[2]


STAGE = Stage("supersession", lambda s: s.config.supersession_factor < 1.0, apply,
              off={"supersession_factor": 1.0}, leaves_unsorted=True)
