"""Supersession (:mod:`projections.queries.supersession`): a turn a later statement superseded is demoted and
labelled, and the turns of the version in force take its place.

After the learned ranker and the learning loop's adjustments: a superseded row's score is multiplied by
``supersession_factor`` and its breakdown says by what and when (``superseded``: the label,
``superseded_by``: the turns of the version in force, ``superseded_by_note``: that version's id); each turn of the
version in force, when the search's scope and time allow it, is lifted to at least the superseded row's score
before demotion (added when no list had found it) and names the turn it replaces (``supersedes``). With ``now``
before the change nothing is superseded yet; ``scope`` archive/all still returns the superseded turns, labelled.

A turn that also states a constraint still in force ("For Orion we picked MongoDB, and we must never store passport
numbers") is superseded only for the part that changed: when the question's terms meet the constraints in force read
from it more than the rest of the turn (:func:`asks_in_force`), the row keeps its score and is not labelled; its
breakdown says what part was superseded (``partly_superseded``: the label). Other notes in force do not count: a
note such as "这个月换了编辑器" ("changed editors this month"), read from a change that was itself left behind,
would keep the old value unlabelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from projections.queries.note_coverage import uncarried
from projections.queries.scoring import Scoring, Stage
from projections.queries.supersession import superseded_turns
from projections.rules.extraction import key_terms
from projections.rules.text import has_cjk


def _met(query_terms: tuple[str, ...], terms: set[str], text: str, idf: Callable[[str], float]) -> float:
    """The IDF of the question's terms that ``terms`` (or, for a Chinese term, the characters of ``text``) hold."""
    chars = set(text)
    return sum(idf(t) for t in query_terms if t in terms or (has_cjk(t) and set(t) <= chars))


def asks_in_force(query: str, text: str, in_force: list, idf: Callable[[str], float]) -> bool:
    """Whether ``query`` asks about what a partly superseded turn (``text``) still states: its terms meet the notes
    in force read from the turn (their text and key terms) more than the clauses those notes leave out, each term
    weighed by its ``idf`` (a project's name, said in many turns, weighs less than "store")."""
    asked = key_terms(query)
    notes = [n.text for n in in_force]
    held = {t for n in in_force for t in (*key_terms(n.text), *n.key_terms)}
    rest = uncarried(text, notes) or ""
    return _met(asked, held, " ".join(notes), idf) > _met(asked, set(key_terms(rest)), rest, idf)


def apply(s: Scoring) -> None:
    index = superseded_turns(s.memory.notes, s.now, s.memory.messages.by_id)
    if not index:
        return
    factor, rows = s.config.supersession_factor, s.rows
    by_id = {row[2]: row for row in rows}
    by_msg = s.memory.messages.by_id
    notes, lexical = s.memory.notes, s.memory.lexical
    sources = notes.sources()
    n = len(lexical.doc_ids)

    def idf(term: str) -> float:
        df = len(lexical.postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    for row in list(rows):
        change = index.get(row[2])
        if change is None:
            continue
        in_force = [n for n in sources.get(row[2], ()) if n.category == "constraint"
                    and (n.valid_at(s.now) if s.now else n.status == "active")]
        if in_force and asks_in_force(s.query, by_msg[row[2]].text, in_force, idf):
            row[3]["partly_superseded"] = change.label
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
