"""Shared photos as graph memories (part of ``graph-rules-v2``).

Chat turns may carry the caption of a shared photo, written
``[image: a photo of a painting of a sunset over a lake]``. Sharing it is a
memory of the speaker, and what the photo shows is its object, so two turns
showing a painting are joined in the graph like two turns that mention one:

    "[image: a photo of a painting of a sunset over a lake]" → (Melanie, event, share, painting, of=sunset)
    "[image: a photo of a bowl of ice cream with a spoon]"   → (Melanie, event, share, ice cream)
    "[image: a photo of a person holding a necklace]"         → (Caroline, event, share, necklace)
    "[image: a photo of a man standing next to a car]"        → (Caroline, event, share, car)

The object is the head of the caption's first noun phrase; a container
("bowl of", "stack of", "group of") gives way to what it holds; a person
gives way to what they hold or where they are. A caption showing only people
states nothing.
"""

from __future__ import annotations

import re

from projections.rules.graph_english import Reading
from projections.rules.graph_rules import words

CAPTION = re.compile(r"\[\s*image\s*:\s*(?P<caption>[^\]]*)\]", re.IGNORECASE)
_FRAME = re.compile(r"^\s*(?:(?:a|an|the)\s+)?(?:close[\s-]?up\s+)?(?:photo(?:graph|graphy)?|picture|pic|image|snapshot"
                    r"|screenshot|selfie)\s+(?:of\s+)?", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_SKIPPED = words("a an the some two three four five several many few its his her their this that these those")
_STOPS = words("""with on in at near next by under over and or that which who is are from for behind inside outside
    around against of to into onto while as beside between above below along across through up down""")
_CONTAINERS = words("""group bunch pile stack pair couple collection set lot box bowl plate piece slice cup glass jar bag
    basket tray row variety handful bouquet bottle mug assortment array close-up closeup view shelf front top middle
    side edge bottom""")
_PEOPLE = words("""person man woman men women people boy girl boys girls child children kid kids guy guys lady ladies
    couple crowd baby player players someone persons friends family group team student students""")
_HOLDS = words("holding carrying wearing playing reading eating drinking cooking showing with")
_WHERE = words("on at in near around inside outside by")


def _phrase(tokens: list[str], i: int) -> tuple[list[str], int]:
    """The noun phrase at ``tokens[i]``: determiners skipped, up to a preposition or a participle."""
    while i < len(tokens) and tokens[i].lower() in _SKIPPED:
        i += 1
    parts: list[str] = []
    while i < len(tokens):
        w = tokens[i].lower()
        if w in _STOPS or (parts and w.endswith("ing") and w not in ("building", "painting", "ring", "wedding")):
            break
        parts.append(tokens[i])
        i += 1
    return parts, i


def _contents(tokens: list[str], i: int) -> tuple[list[str], int]:
    """The noun phrase at ``tokens[i]``, a container ("a bowl of", "in front of") giving way to what it holds."""
    parts, i = _phrase(tokens, i)
    while parts and parts[-1].lower() in _CONTAINERS and i < len(tokens) and tokens[i].lower() == "of":
        parts, i = _phrase(tokens, i + 1)
    return parts, i


def _shown(caption: str) -> tuple[str | None, dict[str, str]]:
    """What a caption shows: its object and (for "a painting of a sunset") what that depicts."""
    tokens = _WORD.findall(_FRAME.sub("", caption))
    parts, i = _contents(tokens, 0)
    if not parts:
        return None, {}
    if parts[-1].lower() in _PEOPLE:  # the people are not the point; what they hold or where they are is
        for k in range(i, len(tokens)):
            w = tokens[k].lower()
            if w in _HOLDS or w in _WHERE:
                found, _ = _contents(tokens, k + 1)
                if found and found[-1].lower() not in _PEOPLE:
                    return " ".join(found).lower(), {}
        return None, {}
    attributes = {}
    if i < len(tokens) and tokens[i].lower() == "of":
        depicted, _ = _phrase(tokens, i + 1)
        if depicted:
            attributes["of"] = " ".join(depicted).lower()
    return " ".join(parts).lower(), attributes


def caption_readings(text: str, speaker: str) -> list[tuple[Reading, str]]:
    """The shared photos of a turn, each with its caption (the evidence)."""
    out = []
    for match in CAPTION.finditer(text):
        shown, attributes = _shown(match["caption"])
        if shown:
            out.append((Reading(speaker, "event", "share", shown, attributes), match["caption"].strip()))
    return out
