"""Reading one English clause as subject–verb–object (part of ``graph-rules-v2``).

``read_english("I went to a support group", speaker="Caroline", ...)`` gives
``Reading("Caroline", "event", "go", "support group", {})``. The clause has
already had its time expression cut out; :mod:`projections.rules.graph_extract`
splits turns into clauses and attaches the time.

How a clause is read:

1. Expand contractions ("I'm" → "I am") and drop openers ("so", "btw", "just").
2. Subject: "I" / "we" (the speaker), "my sister [Anna]" (the sister, plus a
   relation memory), "Anthony and I" / "the kids and I" / "me and Jon" (the
   speaker, with them), or a capitalised name followed by a verb. No subject: the subject of the clause
   before ("… and got a dog"), or the speaker at the start of a sentence
   ("Lost my job yesterday").
3. Verb group: past forms are events; "am going to X" / "will X" planned
   events, and so are "am off to X"; "am Xing" ongoing events; present forms
   facts (habits, states), and so are leanings ("am passionate about X");
   like / love / hate facts (past: opinions); think / believe opinions;
   negations, modals and hedges ("I want", "I guess") nothing.
4. Object: the noun phrase after the verb (and its particle: "signed up for"),
   articles dropped, "my" → "<speaker>'s"; "at / in / to X" → place,
   "with X" → with. A pronoun or an empty word ("it", "a blast") is no object.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from projections.rules.english_lemma import SAME_IN_PAST, ing_lemma, past_lemma, present_lemma
from projections.rules.graph_rules import (
    ADVERBS_EN, BASE_VERBS_EN, BE_FORMS, BREAK_EN, DETERMINERS_EN, GET_STATES, KIN_EN_RX, LEAD_PREPS_EN, LEANINGS_EN,
    LIFE_EVENTS, MODALS_EN, NAME_RX, NEGATIONS_EN, NOT_NAMES, NOT_PLACES_EN, NP_STOP_EN, OPINION_EN, PARTNER_EN_RX,
    PASSIVE_EVENTS_EN, PHRASAL_EN, PLACE_PREPS_EN, PREFERENCE_EN, SKIP_PRESENT_EN, SKIP_VERBS_EN, TRAILING_EN,
    VAGUE_EN,
)


class Reading(NamedTuple):
    """One memory read from a clause, before importance and time are attached."""

    subject: str
    memory_type: str
    topic: str
    object: str | None
    attributes: dict[str, str]
    status: str | None = None  # "planned" or "ongoing" for events not (yet) done


class _Predicate(NamedTuple):
    memory_type: str
    lemma: str
    status: str | None
    next: int  # index of the first token after the verb group


_TOKEN = re.compile(r"[A-Za-z0-9][\w'+&.-]*[\w+]'?|[A-Za-z0-9]|[^\w\s]")
_CONTRACTIONS = tuple((re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"\b(i)'m\b", r"\1 am"), (r"\b(\w+)'re\b", r"\1 are"), (r"\b(\w+)'ve\b", r"\1 have"),
    (r"\b(\w+)'ll\b", r"\1 will"), (r"\bcan't\b", "can not"), (r"\bwon't\b", "will not"), (r"\b(\w+)n't\b", r"\1 not"),
    (r"\bgonna\b", "going to"), (r"\bgotta\b", "have to"), (r"\b(i|we)'d\b", r"\1 would"),
))
# A text without an apostrophe needs only these (no replacement writes one, so the others could never match).
_CONTRACTIONS_NO_APOSTROPHE = tuple((p, r) for p, r in _CONTRACTIONS if "'" not in p.pattern)
LEAD = re.compile(
    r"^(?:(?:so|and|but|also|well|oh|ah|actually|yeah|yep|yes|btw|anyway|plus|then|finally|recently|lately"
    r"|honestly|luckily|thankfully|unfortunately|sadly|fortunately|guess\s+what|by\s+the\s+way|on\s+top\s+of\s+that"
    r"|in\s+fact|hey|hi|wow|haha|lol|omg|ok|okay|um|uh|just|and\s+then)\b[\s,!:.-]*)+",
    re.IGNORECASE,
)
_SUBJECT = re.compile(
    r"^(?:(?P<partner>" + PARTNER_EN_RX + r")\s+and\s+[Ii]\b|[Mm]e\s+and\s+(?P<partner_after>" + PARTNER_EN_RX + r")\b"
    r"|(?P<i>[Ii])\b|(?P<we>[Ww]e)\b"
    r"|[Mm]y\s+(?P<kin>" + KIN_EN_RX + r")(?:,?\s+(?P<kname>" + NAME_RX + r")\b,?)?"
    r"|(?P<name>" + NAME_RX + r")\b)"
)
_KIN = re.compile(KIN_EN_RX)
_IS_MY_KIN = re.compile(r"^(?P<name>" + NAME_RX + r")\s+(?:is|was)\s+my\s+(?P<kin>" + KIN_EN_RX + r")")


def _possessive(phrase: str, speaker: str) -> str:
    """"my sister" → "Caroline's sister", "our city" → "Caroline's city", "the kids" → "kids"."""
    phrase = re.sub(r"^the\s+", "", phrase.strip(), flags=re.IGNORECASE)
    return re.sub(r"^(?:my|our)\s+", f"{speaker}'s ", phrase, flags=re.IGNORECASE)


_DEGREE = frozenset({"so", "very", "super", "really", "pretty", "quite", "totally", "extremely", "kinda", "a", "big",
                     "huge", "real"})
_QUOTES = frozenset({'"', "“", "”"})
_GERUND_LINKS = frozenset({"into", "on", "down", "up", "out", "about", "for", "over", "through"})
_OWNERS = frozenset({"the", "a", "an", "my", "our", "his", "her", "their", "this", "that"})


def _is_name(word: str) -> bool:
    """A capitalised clause opener that is not a verb ("Lost my job…"), a gerund ("Winning was…") or a
    function word ("Thanks")."""
    first = word.split()[0]
    return (first not in NOT_NAMES and past_lemma(first) is None and first.lower() not in BASE_VERBS_EN
            and not first.endswith("ing"))


def relation(speaker: str, kin: str, name: str | None) -> Reading:
    kin = re.sub(r"\s+", " ", kin.lower())
    return Reading(speaker, "relation", kin, name or f"{speaker}'s {kin}", {})


def _at(words: list[str], i: int) -> str:
    return words[i] if 0 <= i < len(words) else ""


def _skip(words: list[str], i: int, skipped: frozenset[str]) -> int:
    while _at(words, i) in skipped:
        i += 1
    return i


def _predicate(words: list[str], i: int, *, first_person: bool, tense: str | None) -> _Predicate | None:
    """The verb group starting at ``words[i]``: what kind of memory, its lemma and where the object starts."""
    i = _skip(words, i, ADVERBS_EN)
    w, nxt = _at(words, i), _at(words, i + 1)
    if w in NEGATIONS_EN or w in MODALS_EN or not w.isalpha():
        return None
    if w in ("will", "shall"):
        j = _skip(words, i + 1, ADVERBS_EN)
        return _Predicate("event", words[j], "planned", j + 1) if _at(words, j) in BASE_VERBS_EN else None
    if w in BE_FORMS:
        past, j = w in ("was", "were"), _skip(words, i + 1, ADVERBS_EN)
        v = _at(words, j)
        if v == "going" and _at(words, j + 1) == "to":
            if past:
                return None  # "was going to": it did not happen
            if _at(words, j + 2) in BASE_VERBS_EN:
                return _Predicate("event", words[j + 2], "planned", j + 3)
            return _Predicate("event", "go", "planned", j + 1)
        if v == "off" and _at(words, j + 1) == "to" and not past:  # "I'm off to go swimming", "off to the gym"
            if _at(words, j + 2) in BASE_VERBS_EN:
                return _Predicate("event", words[j + 2], "planned", j + 3)
            return _Predicate("event", "go", "planned", j + 1)
        if v.endswith("ing") and (lemma := ing_lemma(v)) and lemma not in SKIP_VERBS_EN and v != "being":
            return _Predicate("event", lemma, None if past else ("planned" if tense == "future" else "ongoing"), j + 1)
        if v == "born":
            return _Predicate("fact", "be born", None, j + 1)
        if v in PASSIVE_EVENTS_EN:
            return _Predicate("event", f"be {v}", None, j + 1)
        if v == "from":
            return _Predicate("fact", "be from", None, j + 1)
        k = _skip(words, j, _DEGREE)
        if _at(words, k) in LEANINGS_EN and _at(words, k + 1) == LEANINGS_EN[_at(words, k)] and not past:
            return _Predicate("fact", f"be {words[k]} {words[k + 1]}", None, k + 2)  # "I'm passionate about X"
        if _at(words, k) == "into" and not past:
            return _Predicate("fact", "be into", None, k + 1)
        return _Predicate("fact", "be", None, j) if v in ("a", "an") and not past else None  # not "when I was a kid"
    if w in ("have", "has", "had"):
        j = _skip(words, i + 1, ADVERBS_EN)
        v = _at(words, j)
        if v in NEGATIONS_EN or v == "to":
            return None
        if v == "been":
            after = _at(words, j + 1)
            if after == "to":
                return _Predicate("event", "go", None, j + 1)
            lemma = ing_lemma(after) if after.endswith("ing") else None
            if lemma and lemma not in SKIP_VERBS_EN:
                return _Predicate("event", lemma, "ongoing" if w != "had" else None, j + 2)
            return None
        if v == "got":
            return _Predicate("fact", "have", None, j + 1)
        if lemma := past_lemma(v):  # "I've joined", but not "I've heard"; "I've always liked X" is a liking
            kind = "fact" if lemma in PREFERENCE_EN else "event"
            return _Predicate(kind, lemma, None, j + 1) if lemma not in SKIP_VERBS_EN else None
        return _Predicate("event" if w == "had" else "fact", "have", None, i + 1)
    if w in ("do", "does", "did"):
        if nxt in NEGATIONS_EN:
            return None
        if nxt in BASE_VERBS_EN:  # "I did enjoy it": emphatic
            return _predicate(words, i + 1, first_person=first_person, tense="past" if w == "did" else tense)
    if w in OPINION_EN or (w in ("feel", "felt", "feels") and nxt in ("that", "like")):
        return _Predicate("opinion", OPINION_EN.get(w, "feel"), None, i + 1)
    lemma = past_lemma(w)
    if lemma in PREFERENCE_EN:
        return _Predicate("opinion", lemma, None, i + 1)  # "I loved the concert": a judgement of one thing
    base = present_lemma(w)
    if (first_person and w in PREFERENCE_EN) or (not first_person and base != w and base in PREFERENCE_EN):
        return _Predicate("fact", base, None, i + 1)  # "I love X", "Anna likes X"; not "Moments like these"
    if w == "got" and nxt in GET_STATES:
        return _Predicate("event", f"get {nxt}", None, i + 2)
    if w in SAME_IN_PAST and first_person:
        return _Predicate("event" if tense == "past" else "fact", w, None, i + 1)
    if lemma and lemma not in SKIP_VERBS_EN:
        return _Predicate("event", lemma, None, i + 1)
    if lemma:
        return None
    if first_person:
        if w in SKIP_VERBS_EN or w in SKIP_PRESENT_EN or w in NP_STOP_EN or w in DETERMINERS_EN:
            return None
        return _Predicate("fact", w, None, i + 1)
    ok = base != w and base in BASE_VERBS_EN and base not in SKIP_VERBS_EN
    return _Predicate("fact", base, None, i + 1) if ok else None


def _noun_phrase(tokens: list[str], words: list[str], j: int, speaker: str) -> tuple[str | None, int]:
    if _at(words, j) in _QUOTES:  # a quoted title is one noun phrase: "The Lord of the Rings"
        close = next((k for k in range(j + 1, len(words)) if words[k] in _QUOTES), None)
        if close and close > j + 1:
            return " ".join(tokens[j + 1:close]), close + 1
    parts: list[str] = []
    while j < len(words) and len(parts) < 8:
        w = words[j]
        if w in _QUOTES:
            j += 1
            continue
        gerund = len(parts) == 1 and parts[0].endswith("ing") and (w in _GERUND_LINKS or w in DETERMINERS_EN)
        if not w[0].isalnum() or (not gerund and (w in NP_STOP_EN or (parts and w in DETERMINERS_EN))):
            break
        parts.append(tokens[j])
        j += 1
    while parts and (parts[0].lower() in DETERMINERS_EN or parts[0].lower() == "of"):
        parts.pop(0)
    while parts and (parts[-1].lower() in TRAILING_EN or parts[-1].lower() in NP_STOP_EN):
        parts.pop()
    if not parts or all(p.lower() in VAGUE_EN or p.lower() in ("my", "our", "his", "her", "their") for p in parts):
        return None, j
    return _possessive(" ".join(parts), speaker), j


def _object_and_attributes(tokens: list[str], words: list[str], j: int, lemma: str,
                           speaker: str) -> tuple[str, str | None, dict[str, str]]:
    topic, attributes = lemma, {}
    if _at(words, j) in PHRASAL_EN.get(lemma, ()):
        topic, j = f"{lemma} {words[j]}", j + 1
    if _at(words, j) == "with":
        np, j = _noun_phrase(tokens, words, j + 1, speaker)
        if np:
            attributes["with"] = np
    if lemma in ("go", "come") and _at(words, j) == "to" and _at(words, j + 1) in BASE_VERBS_EN:
        topic, j = words[j + 1], j + 2  # "went to see a movie": the seeing is the memory
    elif _at(words, j) == "to" and _at(words, j + 1).isalpha() and _at(words, j + 1) not in _OWNERS \
            and not tokens[j + 1][:1].isupper():  # "started to paint landscapes": the infinitive is the object
        if (past_lemma(words[j + 1]) or words[j + 1]) in SKIP_VERBS_EN:
            return topic, None, attributes
        j += 1
    elif _at(words, j) in LEAD_PREPS_EN:
        j += 1
    obj, j = _noun_phrase(tokens, words, j, speaker)
    while j < len(words):
        w = words[j]
        if w in BREAK_EN or (w == "to" and _at(words, j + 1) in BASE_VERBS_EN):
            break  # a new clause, or a purpose ("to show off my studio")
        key = "place" if w in PLACE_PREPS_EN else "with" if w == "with" else None
        if w == "to" and not (_at(words, j + 1) in _OWNERS or tokens[min(j + 1, len(tokens) - 1)][:1].isupper()):
            key = None  # "to the museum", "to Rome"; not "to remind myself"
        if key and key not in attributes:
            np, end = _noun_phrase(tokens, words, j + 1, speaker)
            if np and not (key == "place" and (np.split()[-1].lower() in NOT_PLACES_EN or np.endswith("ing")
                                               or np.split()[0].endswith("ing"))):
                attributes[key], j = np, end
                continue
        j += 1
    return topic, obj, attributes


def _opinion(tokens: list[str], words: list[str], j: int, subject: str, topic: str, speaker: str) -> Reading | None:
    j += 1 if _at(words, j) in ("that", "like") else 0
    rest = [re.sub(r"^(?:I|me)$", speaker, t) for t in tokens[j:]]
    lowered = [w.lower() for w in rest]
    copula = next((k for k, w in enumerate(lowered) if w in ("is", "are", "was", "were", "am")), None)
    if copula:
        about, _ = _noun_phrase(rest[:copula], lowered[:copula], 0, speaker)
        judgement = " ".join(rest[copula + 1:]).strip(" ,.!")
        return Reading(subject, "opinion", topic, about, {"judgement": judgement}) if about and judgement else None
    about, _ = _noun_phrase(rest, lowered, 0, speaker)
    return Reading(subject, "opinion", topic, about, {}) if about else None


def read_english(clause: str, *, speaker: str, inherited: str | None, tense: str | None) -> tuple[list[Reading], str | None]:
    """The memories one clause states, and its subject (for a following "… and got a dog")."""
    text = clause.replace("’", "'")
    for pattern, replacement in _CONTRACTIONS if "'" in text else _CONTRACTIONS_NO_APOSTROPHE:
        text = pattern.sub(replacement, text)
    text = LEAD.sub("", text.strip(" ,.!-–—")).strip()
    text = re.sub(r"^been\b", "have been", text, flags=re.IGNORECASE)  # "Been reading that book…": I have been
    if match := _IS_MY_KIN.match(text):
        return [relation(speaker, match["kin"], match["name"])], None
    readings: list[Reading] = []
    subject_match = _SUBJECT.match(text)
    if subject_match and subject_match["name"] and not _is_name(subject_match["name"]):
        subject_match = None
    attributes: dict[str, str] = {}
    partner = None
    if subject_match is None:
        if inherited is None:
            return [], None
        subject, first_person, rest = inherited, inherited == speaker, text
    else:
        rest, first_person = text[subject_match.end():], True
        subject = speaker
        if partner := subject_match["partner"] or subject_match["partner_after"]:
            attributes["with"] = _possessive(partner, speaker)
            if partner.lower().startswith("my "):
                readings.append(relation(speaker, partner[3:], None))
        elif kin := subject_match["kin"]:
            subject, first_person = subject_match["kname"] or f"{speaker}'s {kin.lower()}", False
            readings.append(relation(speaker, kin, subject_match["kname"]))
        elif subject_match["name"]:
            subject, first_person = subject_match["name"], False
    tokens = _TOKEN.findall(rest)
    words = [t.lower() for t in tokens]
    predicate = _predicate(words, 0, first_person=first_person, tense=tense)
    if predicate is None or (subject_match is None and predicate.memory_type != "event"):
        return readings, subject if subject_match else None
    if predicate.memory_type == "opinion":
        opinion = _opinion(tokens, words, predicate.next, subject, predicate.lemma, speaker)
        return readings + ([opinion] if opinion else []), subject
    topic, obj, found = _object_and_attributes(tokens, words, predicate.next, predicate.lemma, speaker)
    if topic in ("take", "bring") and obj and len(obj.split()) > 1 and (ing_lemma(obj.split()[-1]) or "") in BASE_VERBS_EN:
        *whom, activity = obj.split()  # "took my fam camping": whom, and what for
        obj, found = " ".join(whom), {**found, "activity": activity}
    if "with" in attributes and "with" in found:  # "My husband and I went … with the kids"
        found["with"] = f"{attributes['with']}, {found['with']}"
    attributes = {**attributes, **found}
    anchored = obj is not None or "place" in attributes or LIFE_EVENTS.get(topic.replace(" ", "_"), 0) >= 0.3
    if not anchored and not topic.startswith(("be ", "get ")):
        return readings, subject  # "I loved it", "we had a blast": nothing to anchor a memory on
    kin_with = attributes.get("with", "").removeprefix(f"{speaker}'s ")
    if kin_with != attributes.get("with") and _KIN.fullmatch(kin_with) and not (subject_match and partner):
        readings.append(relation(speaker, kin_with, None))  # "… with my sister"
    memory = Reading(subject, predicate.memory_type, topic, obj, attributes, predicate.status)
    return [memory, *readings], subject
