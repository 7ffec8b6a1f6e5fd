"""Reading one Chinese clause as subject–verb–object (part of ``graph-rules-v2``).

``read_chinese("我去了瑜伽课", speaker="小红", ...)`` gives
``Reading("小红", "event", "去", "瑜伽课", {})``. The clause has already had
its time expression cut out.

How a clause is read: subject 我 / 我们 (the speaker), 我妹妹 / 我的妹妹
(the sister, plus a relation memory; a name after it, 我妹妹丽丽, names her),
a person's name (jieba tags it ``nr``), or, when Chinese drops it, the subject
of the clause before. Then, in any order: adverbs (也, 已经, 一起…), a place
(在公园), a companion (和朋友一起); negations (不, 没) and wishes (想, 希望)
state nothing; 要 / 准备 / 计划 make the event planned. Then the verb (the
table in :mod:`projections.rules.graph_rules`, else a word jieba tags as a verb),
its aspect (了 / 过: done), and the object with "一只" / "一个" and final
particles removed. 觉得 / 认为 X很Y is an opinion about X.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba

from projections.adapters import jieba_dict
from projections.rules.graph_english import Reading
from projections.rules.graph_rules import (
    KIN_ZH_RX, OPINION_ZH, PREFERENCE_ZH, STATIVE_ZH, VERB_ZH_RX, ZH_ADVERB, ZH_ASPECT, ZH_JUDGEMENT, ZH_LEAD,
    ZH_NEGATION, ZH_PLACE, ZH_PLAN, ZH_PRONOUN_SUBJECTS, ZH_QUANTITY, ZH_TRAILER, ZH_WISH, ZH_WITH,
)

jieba.setLogLevel(logging.WARNING)

_VERB = re.compile(VERB_ZH_RX)
_KIN_SUBJECT = re.compile(r"^我们?的?(?P<kin>" + KIN_ZH_RX + ")")
_IS_MY_KIN = re.compile(r"^(?P<name>[^，,。是我]{1,8}?)是我们?的?(?P<kin>(?:最好的|好)?" + KIN_ZH_RX + r")[。！!]*$")
_MY_KIN = re.compile(r"^我们?的?(?P<kin>" + KIN_ZH_RX + r")$")
_MODIFIER = re.compile(r"^(?:出来|起来|下来|上来|过来|过去|出|起|完)?的")  # 我路过的公园, 拍出来的风景
_OWN_COPULA = re.compile(r"^[^，,。！!？?是的]+的[^，,。！!？?是的]{1,6}是")  # X的Y是Z: "the Y of X is Z"
_GOING = ("去", "来", "回")
_WHERE_VERBS = ("工作", "上班", "住")  # 去看了电影: the going carries the seeing


# A clause's text is often tagged twice (no name opens it, so the verb is looked for in the same text) and the
# same clause comes back in other messages: on MemDaily dev, 13,016 taggings of 4,522 distinct texts. jieba's
# tagging is a pure function of the text (its dictionary is not changed at run time), so the recent ones are kept.
TAG_CACHE = 8192


@lru_cache(maxsize=TAG_CACHE)
def _first_tag(text: str):
    """jieba's first part-of-speech word of ``text`` (``None`` for an empty text); the tagger loads its model on
    first use, not on import. Memoised (the ``pair`` returned is only read, never changed).

    ``posseg.cut`` is a generator: the first word costs the block's word graph and the tagger's HMM over the first
    run of unknown characters only, not over the rest of the text (the HMM was ~75 % of the graph rules' CPU on
    MemDaily when every word was tagged); it is the first word ``posseg.lcut`` gives.
    """
    import jieba.posseg as posseg  # noqa: PLC0415 - about a second to import: only when a Chinese text needs it

    jieba_dict.load()
    return next(posseg.cut(text), None)


def load_tagger() -> None:
    """Import jieba's part-of-speech tagger and load its model now (:mod:`projections.rules.dictionaries`)."""
    _first_tag.__wrapped__("我们")  # not through the memo: no cache entry is made


def tag_cache_clear() -> None:
    """Empty the memo of clause tags (it holds message texts: an erasure leaves no copy of them)."""
    _first_tag.cache_clear()


def relation(speaker: str, kin: str, name: str | None) -> Reading:
    return Reading(speaker, "relation", kin, name or f"{speaker}的{kin}", {})


def _name(text: str) -> str | None:
    """A person's name opening ``text`` ("小明喜欢…"), as jieba tags it."""
    first = _first_tag(text)
    if first and first.flag in ("nr", "nrfg", "nrt") and first.word not in ZH_PRONOUN_SUBJECTS:
        return first.word
    return None


def _verb(text: str) -> str | None:
    first = _first_tag(text)
    if match := _VERB.match(text):
        verb = match.group()
        # 上司 (a boss), 有时候 (sometimes), 去年 (last year): the table's verb only opens a longer word that jieba
        # reads as no verb, so the clause has none here
        if first and len(first.word) > len(verb) and first.word.startswith(verb) and not first.flag.startswith("v"):
            return None
        return verb
    return first.word if first and first.flag.startswith("v") else None


def _clean(text: str) -> str | None:
    text = ZH_TRAILER.sub("", ZH_QUANTITY.sub("", text.strip())).strip(" ，,。！!~…")
    return text or None


def read_chinese(clause: str, *, speaker: str, inherited: str | None, tense: str | None) -> tuple[list[Reading], str | None]:
    """The memories one clause states, and its subject (for the next clause, which may drop it)."""
    text = ZH_LEAD.sub("", clause.strip(" ，,。！!？?~…")).strip()
    if match := _IS_MY_KIN.match(text):
        return [relation(speaker, match["kin"], match["name"])], None
    readings: list[Reading] = []
    if match := _KIN_SUBJECT.match(text):
        rest = text[match.end():]
        name = _name(rest)
        subject = name or f"{speaker}的{match['kin']}"
        readings.append(relation(speaker, match["kin"], name))
        rest = rest[len(name or ""):]
    elif text.startswith("我"):
        subject, rest = speaker, text[2:] if text.startswith("我们") else text[1:]
    elif name := _name(text):
        subject, rest = name, text[len(name):]
    elif inherited:
        subject, rest = inherited, text
    else:
        return [], None
    attributes: dict[str, str] = {}
    planned, done, rest = False, False, rest.strip()
    while True:
        if match := ZH_ADVERB.match(rest):
            done = done or match.group() in ("刚", "刚刚", "已经", "终于", "曾经")
            rest = rest[match.end():]
        elif ZH_NEGATION.match(rest) or ZH_WISH.match(rest):
            return readings, subject
        elif (match := ZH_PLAN.match(rest)) and _VERB.match(rest[match.end():]):
            planned, rest = True, rest[match.end():]
        elif "place" not in attributes and (match := ZH_PLACE.match(rest)):
            attributes["place"], rest = match["place"], rest[match.end():]
        elif "with" not in attributes and (match := ZH_WITH.match(rest)):
            companion, rest = match["with"], rest[match.end():]
            if kin := _MY_KIN.match(companion):
                companion = f"{speaker}的{kin['kin']}"
                readings.append(relation(speaker, kin["kin"], None))
            attributes["with"] = companion
        else:
            break
    verb = _verb(rest)
    if verb is None:
        return readings, subject
    rest = rest[len(verb):]
    aspect = ZH_ASPECT.match(rest)
    rest = rest[aspect.end():]
    done = done or aspect["asp"] in ("了", "过") or rest.rstrip("。！!~").endswith("了")
    if verb in OPINION_ZH:
        complement = _clean(rest) or ""
        split = ZH_JUDGEMENT.match(complement)
        about = _clean(split["o"]) if split else _clean(complement)
        if about:
            judgement = {"judgement": split["j"]} if split else {}
            readings.insert(0, Reading(subject, "opinion", verb, about.replace("我", speaker), judgement))
        return readings, subject
    if _MODIFIER.match(rest) or _OWN_COPULA.match(rest):
        # 我路过的那个公园是… / 拍出来的风景: the verb describes a noun (a relative clause); 烹饪技艺大会的地点是…: the word
        # opens a noun phrase whose own 是 is the clause's predicate. Neither states what the verb would.
        return readings, subject
    if verb in _GOING and (second := _VERB.match(rest)):  # 去看了一场电影 → 去, 看电影
        after = rest[second.end():]
        then = ZH_ASPECT.match(after)
        done = done or then["asp"] in ("了", "过")
        obj = second.group() + (_clean(after[then.end():]) or "")
    else:
        obj = _clean(rest)
    if obj is None and verb in _WHERE_VERBS and "place" in attributes:
        obj = attributes.pop("place")  # 我在谷歌工作: where one works is what the fact is about
    if obj is None and "place" not in attributes and len(verb) < 2:
        return readings, subject  # 跑步, 游泳 carry their object; 去 alone says nothing
    if verb in PREFERENCE_ZH or (verb in STATIVE_ZH and not done and not planned):
        memory_type, status = "fact", None
    elif done or planned or tense is not None:
        memory_type, status = "event", "planned" if planned or (tense == "future" and not done) else None
    else:
        memory_type, status = "fact", None  # 我每天跑步: a habit
    readings.insert(0, Reading(subject, memory_type, verb, obj, attributes, status))
    return readings, subject
