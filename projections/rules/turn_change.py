"""What a turn says it left behind, English and Chinese (``turn-change-v1``): the old values a change names.

"I've switched from oolong tea to hot chocolate", "the launch slipped from April 2 to May 20", "I swapped
bouldering for sailing", "Leaving Lisbon was hard", "数据库从 PostgreSQL 换成 MySQL", "我最近不喝绿茶了",
"不是四月二日了": each names a value that no longer holds (the *old* one) and often the new one. A pure,
deterministic function of the text; the decisions it leads to are recorded once as ``message_superseded``
events (:mod:`projections.decisions.turn_supersession`), so replay never runs it again, and changing a pattern
means a new id. Questions and hypotheticals ("should we switch from X?", "如果换成…") name nothing.

An old value is returned as its parts: "PostgreSQL on AWS" and "AWS上的PostgreSQL" are two parts (a turn stating
either one is left behind). A turn states a part when it has all of the part's key terms, or, for a Chinese
part, when its text holds the part as written (jieba may cut "阿里云" one way in one sentence and another way in
the next): :meth:`Change.stated_in`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from projections.rules.extraction import key_terms, split_statements
from projections.rules.text import has_cjk, rule_text

CHANGE_RULES_ID = "turn-change-v1"


def _rx(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


_VERB = (r"(?:switch|migrat|mov|chang|convert|transition|upgrad|slip|slipp|push|postpon|delay|shift|reschedul"
         r"|swap|replac)")
_GERUND = r"(?:(?:using|use|doing|drinking|eating|playing|running|going\s+to)\s+)?"
# Each pattern names the old value (o) and, when it can, the new one (n).
EN_CHANGES = _rx(
    _VERB + r"\w*\b.*?\bfrom\s+(?:my\s+|our\s+|the\s+)?(?P<o>.+?)\s+(?:over\s+)?(?:to|onto|into)\s+(?P<n>.+)",
    r"\bswapp?e?d?\s+(?:my\s+|our\s+|the\s+)?(?P<o>.+?)\s+for\s+(?P<n>.+)",
    r"\breplac\w*\s+(?P<o>.+?)\s+(?:with|by)\s+(?P<n>.+)",
    r"\b(?:mov|migrat|switch|transition)\w*\s+(?:\S+\s+){1,3}?(?:off|away\s+from)\s+(?P<o>.+?)"
    r"(?:\s+(?:and\s+)?(?:onto|to)\s+(?P<n>.+)|$)",
    r"\b(?:the\s+)?(?:move|migration|switch|change)\s+from\s+(?P<o>.+?)"
    r"(?:\s+(?:went|was|is|has|had|finished|completed|took|ended)\b|$)",
    r"^(?P<o>.+?)\s+(?:clashed|clashes|clash)\b",
)
# Read only in a turn that also says something changed (_CUE): "dessert instead of drinks" or "I stopped by the
# store" alone is no change of habit.
EN_CUED = _rx(
    r"(?P<n>\S+(?:\s+\S+)?)\s+instead\s+of\s+(?P<o>.+)",
    r"\b(?:no\s+longer|stopped|quit|dropped|ditched|abandoned|gave\s+up(?:\s+on)?|got\s+rid\s+of)\s+"
    r"(?!by\b|at\b|in\b|into\b|off\b|to\b|for\b|over\b|out\b)" + _GERUND + r"(?:my\s+|our\s+|the\s+)?(?P<o>[a-z0-9].*)",
    r"\bleaving\s+(?P<o>.+?)\s+(?:was|is|has\s+been)\b",
    r"\bmy\s+(?P<o>.+?)\s+(?:finally\s+|just\s+)?(?:died|broke|gave\s+out)\b",
    r"\b(?:don't|do\s+not|won't|doesn't)\s+(?:use|like|want|drink|eat|play)\s+(?P<o>.+?)\s+any\s?more",
)
_CUE = re.compile(r"\b(?:new|now|switch\w*|chang\w*|these\s+days|from\s+now\s+on|any\s?more|no\s+longer|moved|replac\w*"
                  r"|got\s+myself|bought|settled|plan)\b|现在|改|换|新|以后|不再", re.IGNORECASE)
ZH_CHANGES = _rx(
    r"从(?P<o>.+?)(?:换|改|迁移|切换|转|迁|推迟|提前|延期|挪|搬)(?:到|成|为|用)了?(?P<n>.+)",
    r"把(?P<o>.+?)(?:换成|改成|替换成|替换为|改为|迁移到|切换到|挪到)了?(?P<n>.+)",
    r"(?:用|拿)(?P<n>.+?)(?:替换|代替|取代)掉?(?P<o>.+)",
    r"^(?P<o>(?!现在|以后|目前|如今|全部|都)[^，。：:]+?)(?:换成|改成|替换成|替换为|改为)了?(?P<n>.+)",
    r"(?:不再|弃用|放弃|停用|淘汰|抛弃)(?:使用|用|喜欢|喝|吃)?(?P<o>.+)",
    r"不(?:喝|吃|用|玩|搞)(?P<o>[^，。！]+?)了",
    r"(?P<o>[^，。：:]+?)(?:基本|已经|早就|再也)?(?:不碰|不喝|不吃|不用|没在搞|不玩|不搞)了",
    r"离开(?P<o>[^，。！]+?)(?:还|真|有点|挺|了|$)",
    r"从(?P<o>.+?)(?:搬过来|搬来|的迁移)",
    r"我的(?P<o>.+?)(?:手机|电脑)?(?:彻底|终于|已经)?坏了",
    r"不是(?P<o>[^，。！]+?)了",
    r"(?P<o>[^，。！]+?)冲突",
)
# A clause without any of these words matches no pattern above: it is not tried (most clauses of a dialogue).
_GATE = re.compile(
    r"\b(?:from|swap|swapp|swapped|replac\w*|instead|off|away|longer|stopped|quit|dropped|ditched|abandoned|gave|got"
    r"|leaving|died|broke|clash\w*|any\s?more)\b"
    r"|从|把|替换|代替|取代|换成|改成|改为|不再|弃用|放弃|停用|淘汰|抛弃|不喝|不吃|不用|不玩|不搞|不碰|没在搞|离开|坏了|不是|冲突",
    re.IGNORECASE)
_PARTS = re.compile(r"\s+(?:on|and|with|in)\s+|上的|和|与|[,，、;；]", re.IGNORECASE)
_LEAD = re.compile(r"^(?:我们?|咱们|已经|现在|全部|都|把|的)+")
_TAIL = re.compile(r"(?:上|里|了|啦|吧)+$")


@dataclass(frozen=True)
class Change:
    """One change a clause states: the old value's parts (each a tuple of key terms) and the new value's terms."""

    old: tuple[tuple[str, ...], ...]
    new: tuple[str, ...]
    clause: str
    phrases: tuple[str, ...] = ()  # each old part as written

    def stated_in(self, text: str, terms: set[str]) -> bool:
        """Whether a turn (its text and key terms) states the old value and not all of the new one."""
        if self.new and set(self.new) <= terms:
            return False
        return any(set(part) <= terms or (has_cjk(phrase) and phrase in text)
                   for part, phrase in zip(self.old, self.phrases))


def _parts(phrase: str) -> dict[tuple[str, ...], str]:
    """Each part's key terms → the part as written (first one kept)."""
    out: dict[tuple[str, ...], str] = {}
    for part in _PARTS.split(phrase):
        part = _TAIL.sub("", _LEAD.sub("", part.strip(" \t.!?。！？\"'“”")))
        terms = key_terms(part) if part else ()
        if terms:
            out.setdefault(terms, part)
    return out


@lru_cache(maxsize=4096)
def changes(text: str) -> tuple[Change, ...]:
    """The changes ``text`` states, one per clause at most (the first pattern that names an old value)."""
    found = []
    text = rule_text(text)
    patterns = (*EN_CHANGES, *ZH_CHANGES, *(EN_CUED if _CUE.search(text) else ()))
    for clause in split_statements(text):
        if not _GATE.search(clause):
            continue
        for pattern in patterns:
            match = pattern.search(clause)
            if match is None:
                continue
            parts = _parts(match.group("o"))
            if parts:
                new = key_terms(match.groupdict().get("n") or "")
                kept = {p: w for p, w in parts.items() if not set(p) <= set(new)}  # "moved to X": not from X
                if kept:
                    found.append(Change(tuple(kept), new, clause, tuple(kept.values())))
                    break
    return tuple(found)
