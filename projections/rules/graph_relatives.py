"""Object-first relative clauses as graph memories (part of ``graph-rules-v2``).

Conversation often names a thing first and says what the speaker did with it
after, inside a sentence about something else:

    "This book I read last year reminds me …"        → (Melanie, event, read, book)
    "These figurines I bought yesterday remind me …"  → (Melanie, event, buy, figurines)
    "… this pride parade I went to a few weeks ago"   → (Caroline, event, go, pride parade)
    "Here's a pic of a cake I made recently!"          → (Joanna, event, make, cake)

Only "I" / "we" with a past verb count (the speaker did it); the noun phrase
must follow a determiner and hold no pronoun or function word, and empty
heads ("the way I", "the first time we", "the fact that I") state nothing, and
a noun phrase after a time or reason preposition ("since the launch crunch I
switched to coffee", "after the move we …") is the clause's setting, not its object.
"""

from __future__ import annotations

import re

from projections.rules.english_lemma import past_lemma
from projections.rules.graph_english import Reading
from projections.rules.graph_rules import NP_STOP_EN, SKIP_VERBS_EN, VAGUE_EN, words

_RELATIVE = re.compile(
    r"\b(?i:this|that|the|these|those|my|our|a|an)\s+(?P<np>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:that\s+|which\s+)?"
    r"(?:I|[Ww]e)\s+(?:(?:have|'ve|had|just|recently|finally|actually|also|first|once|even|all)\s+)*(?P<verb>[a-z]+)\b",
)
_EMPTY_HEADS = VAGUE_EN | words("""fact feeling reason way time times day days night moment moments first last kind sort
    type part rest reminder memory memories thought thoughts hope""")
_POSSESSIVES = words("my our")
_INNER = words("of a an the this that these those")
# "since the launch crunch I switched to coffee": a time or reason phrase before the clause, not its object
_ADVERBIAL = re.compile(r"\b(?:since|after|before|during|until|till|because of|due to|when|while|once|throughout|"
                        r"over|by|for|in|on|at)\s*$", re.IGNORECASE)
_UNREAD = SKIP_VERBS_EN | words("have do get")


def relative_readings(clause: str, speaker: str) -> list[Reading]:
    """The things the speaker says they did in "<det> <noun phrase> I <past verb>" clauses."""
    out = []
    for match in _RELATIVE.finditer(clause):
        if _ADVERBIAL.search(clause[: match.start()]):
            continue
        np = match["np"].split()
        while np[0][:1].islower() and (cut := next((k for k, w in enumerate(np) if w.lower() in _INNER), None)) is not None:
            np = np[cut + 1:] or ["."]  # "a pic of a cake I made": the cake; not "The Lord of the Rings"
        if np == ["."]:
            continue
        lemma = past_lemma(match["verb"])
        if lemma is None or lemma in _UNREAD or match["verb"] in ("need", "used"):
            continue
        if any(w.lower() in NP_STOP_EN or w.lower() in _POSSESSIVES for w in np) or np[-1].lower() in _EMPTY_HEADS:
            continue
        if past_lemma(np[-1]) is not None or np[-1].lower().endswith("ly"):  # "the one that got", "really"
            continue
        out.append(Reading(speaker, "event", lemma, " ".join(np), {}))
    return out
