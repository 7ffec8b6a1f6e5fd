"""Lists of activities as graph memories (part of ``graph-rules-v2``).

The clause splitter cuts "I enjoy reading, watching movies, and exploring
nature" into "I enjoy reading" / "watching movies" / "exploring nature"; the
later items have no verb of their own, so they take the first one's:

    "I also enjoy reading, watching movies, and exploring nature"
        → (Joanna, fact, enjoy, reading), (…, enjoy, watching movies), (…, enjoy, exploring nature)
    "I'm carving out some me-time each day - running, reading, or playing my violin"
        → (Melanie, fact, do, running), (…, do, reading), (…, do, playing violin)

A list that follows no activity verb ("… - running, reading, or …") is what
the speaker does: topic ``do``, and only when at least two items follow each
other. An item is a gerund of a known activity verb ("playing", not "nothing"
or "morning") and its object, determiners and possessives dropped.
"""

from __future__ import annotations

import re

from projections.rules.english_lemma import ing_lemma
from projections.rules.graph_english import LEAD, Reading
from projections.rules.graph_rules import (
    BASE_VERBS_EN,
    NP_STOP_EN,
    SKIP_VERBS_EN,
    TRAILING_EN,
    words,
)

_ITEM = re.compile(r"^(?:(?:or|and|also|plus|even)\s+)*(?P<item>[a-z]+ing\b[\w\s'-]*)$", re.IGNORECASE)
_DROPPED = words("a an the my our his her their your some this that these those")


def activity(body: str) -> str | None:
    """The activity a clause names when it is a bare gerund phrase ("or playing my violin" → "playing violin")."""
    match = _ITEM.match(LEAD.sub("", body.strip(" ,.!-–—")).strip())
    if match is None:
        return None
    first, *rest = match["item"].lower().split()
    lemma = ing_lemma(first)
    if lemma is None or lemma not in BASE_VERBS_EN or lemma in SKIP_VERBS_EN:
        return None
    kept = [first]
    for w in rest:
        if w in NP_STOP_EN or len(kept) >= 5:
            break
        if w not in _DROPPED:
            kept.append(w)
    while len(kept) > 1 and kept[-1] in TRAILING_EN:
        kept.pop()
    return " ".join(kept)


def is_activity(reading: Reading) -> bool:
    """Whether a reading's object is an activity that later list items may share its verb with."""
    return bool(reading.object) and reading.memory_type in ("fact", "event") and activity(reading.object) is not None


def list_item(previous: Reading | None, item: str, speaker: str) -> Reading:
    """The memory of a list item: the previous activity's verb, else "do"."""
    if previous is not None:
        return previous._replace(object=item, attributes={k: v for k, v in previous.attributes.items() if k == "with"})
    return Reading(speaker, "fact", "do", item, {})
