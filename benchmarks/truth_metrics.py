"""What :mod:`benchmarks.truth` scores: which value of a fact a retrieved line carries, and the rates over questions.

A line (a search hit or a context item) is one of:

- a **turn**: it carries the current value when it is a user turn stating that value; a superseded value when it is
  a user turn stating one or an assistant reply repeating one. Decided by memory id, never by text (a change such as
  "we're switching from PostgreSQL to MySQL" names both values and states the current one).
- a **note** (or any line derived from turns): it concerns the fact when one of its sources is a turn of the fact
  (a statement or a reply, any value). It carries the current value when its text contains the current value's
  keywords; else a superseded value when its text contains one of those and it was read from a turn that carries
  one. "Maya hates cilantro", read from "I'm vegetarian and I hate cilantro", carries nothing of the diet; "Maya
  stopped drinking green tea", read from the turn that says she switched to coffee, carries neither value.

A line labelled superseded (:func:`labelled_superseded`) carries nothing: it tells the reader its value is old.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import fmean

from benchmarks.truth_script import Fact

CURRENT, STALE = "current", "stale"
# The engine labels a superseded turn's line 'superseded by "…" on YYYY-MM-DD' (projections.queries.supersession);
# any line saying "superseded" is taken as labelled (the scripts' own turns never say it)
SUPERSEDED_LABEL = re.compile(r"\bsuperseded\b", re.IGNORECASE)


def labelled_superseded(text: str, meta: dict | None = None) -> bool:
    """Whether a retrieved line says that it is superseded: the label in its text, or ``superseded`` in the
    breakdown or provenance that came with it (``meta``). Such a line is history, shown as history: not stale."""
    return bool(SUPERSEDED_LABEL.search(text) or (meta or {}).get("superseded"))


@dataclass(frozen=True)
class Evidence:
    """One fact's turns as memory ids."""

    current: frozenset[str]  # the user turns stating the current value
    stale: frozenset[str]  # the user turns stating a superseded value and the replies repeating one
    turns: frozenset[str]  # every statement and reply of the fact, any value

    @classmethod
    def of(cls, fact: Fact, memory_id: dict[str, str]) -> Evidence:
        stated = [frozenset(memory_id[c] for c in ids) for ids in fact.stated]
        echoed = [frozenset(memory_id[c] for c in ids) for ids in fact.echoed]
        stale = frozenset().union(*stated[:-1], *echoed[:-1])
        return cls(stated[-1], stale, frozenset().union(*stated, *echoed))


def _says(text: str, words: tuple[str, ...]) -> bool:
    low = text.lower()
    return any(w.lower() in low for w in words)


def carried(fact: Fact, ev: Evidence, item_id: str, sources: set[str], text: str, is_turn: bool,
            meta: dict | None = None) -> str | None:
    """``current``, ``stale`` or None: the value of ``fact`` a retrieved line carries (see the module's docstring).

    ``sources``: the memory ids the line was read from (a note's turns), ``meta``: its breakdown or provenance."""
    if labelled_superseded(text, meta):
        return None
    if is_turn:
        return CURRENT if item_id in ev.current else STALE if item_id in ev.stale else None
    if not sources & ev.turns:
        return None
    if _says(text, fact.keywords[-1]):
        return CURRENT
    old = sources & ev.stale and any(_says(text, words) for words in fact.keywords[:-1])
    return STALE if old else None


METRICS = (
    "current@1",  # every fact: the top search hit carries the current value
    "current@3",  # every fact: one of the top 3 hits does
    "current_in_context",  # every fact: the question's context does
    "stale@3",  # changed facts: one of the top 3 hits carries a superseded value, unlabelled
    "stale_in_context",  # changed facts: the question's context does
    "constraint_recall",  # constraints: the context built for the constraint's task carries it
    "current_archived",  # every fact: the sweep archives (or would archive) every turn stating the current value
)


def score(fact: Fact, hits: list[str | None], context: list[str | None], task: list[str | None] | None,
          archived: bool) -> dict:
    """One fact's row: ``hits`` / ``context`` / ``task`` are what each line of the search, the question's context and
    the task's context carried (None: nothing of this fact); ``archived``: the sweep takes its current statements."""
    row = {"current@1": hits[:1] == [CURRENT], "current@3": CURRENT in hits[:3],
           "current_in_context": CURRENT in context, "current_archived": archived}
    if fact.changed:
        row |= {"stale@3": STALE in hits[:3], "stale_in_context": STALE in context}
    if task is not None:
        row["constraint_recall"] = CURRENT in task
    return row


def rates(facts: list[Fact], rows: list[dict]) -> dict:
    """Each metric's mean over the facts it is asked of, and how many those are (``n_<metric>``)."""
    out: dict = {"facts": len(facts)}
    for metric in METRICS:
        asked = [r[metric] for r in rows if metric in r]
        out[metric] = round(fmean(asked), 4) if asked else None
        out[f"n_{metric}"] = len(asked)
    return out
