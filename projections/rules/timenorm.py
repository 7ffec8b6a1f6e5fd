"""Relative time expressions turned into absolute spans, English and Chinese (``timenorm-v1``).

``normalize_time("I went there yesterday 8pm", reference)`` finds
"yesterday 8pm" and resolves it against ``reference`` (the message time) to
``[2023-05-09 20:00, 21:00)``. A pure function of its two arguments: no
clock, no locale, no I/O.

Conventions (the places where natural language is ambiguous):

* **Time zone.** Everything resolves on the reference's own wall clock and
  keeps its ``tzinfo``: "today" for a message sent at 2023-05-10 01:00+08:00
  is 10 May, whatever the date in UTC.
* **Spans are half-open** ``[start, end)``: "yesterday" ends at today's midnight.
* **Weeks start on Monday** (ISO 8601). "this week" is the Monday-to-Sunday
  week holding the reference, "last week" the one before it, "next week" the
  one after it. "this weekend" is Saturday 00:00 to Monday 00:00 of this week.
* **A weekday with last / this / next names that day in the previous /
  current / next calendar week**, never "the most recent Friday": on
  Wednesday 2023-05-10, "last Friday" is 2023-05-05, "last Monday" is
  2023-05-01, "this Friday" is 2023-05-12 and "next Monday" is 2023-05-15.
  上周五 / 这周五 / 下周一 follow the same rule, which is also how they are
  read in Chinese. On a Sunday, "last Friday" is therefore nine days back.
* **"N weeks / months / years ago" is a calendar unit**: the week, month or
  year N units before the reference's own, so "a week ago" equals "last week"
  and "two weeks ago" (两周前) is the Monday-to-Sunday week that began 14 to
  20 days earlier. Days and hours are exact: "3 days ago" is one day, "2 hours
  ago" the clock hour that held ``reference - 2h``.
* **Parts of the day** (:data:`~projections.rules.timenorm_rules.PARTS_OF_DAY`):
  morning 06-12, afternoon 12-18, evening 18-24, night 18-06 next day; so
  "last night" / 昨晚 is yesterday 18:00 to today 06:00, while "yesterday
  evening" / 昨天晚上 is yesterday 18:00-24:00.
* **Clock times** have hour granularity: start at the stated minute, end one
  hour later. Without a.m./p.m. an English clock needs a 24-hour form
  ("20:00"); a Chinese clock after 下午 / 晚上 is read as p.m., a bare one
  ("三点") literally (03:00).
* **Dates without a year** ("May 7", 5月7日) take the reference's year.

Not handled (left to the caller or an LLM): bare weekdays ("on Friday"),
seasons, vague spans ("recently", "a few days ago", 几天前) and times relative
to the story rather than the message ("the next day").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, NamedTuple

from projections.rules.timenorm_calendar import (
    Granularity, Hit, calendar_date, clock, day_span, en_number, month_span, monday, part_span, shift, year_span,
    zh_number, zh_unit,
)
from projections.rules.timenorm_rules import (
    EN_CLOCK, EN_DAY_WORDS, EN_NUM, EN_RELATIVE, EN_WEEKDAYS, MONTH, MONTHS, NOT_THE, PART_EN, PART_ZH,
    PHRASE_FILLER, WEEKDAY, ZH_CLOCK, ZH_DAY_WORDS, ZH_NUM, ZH_RELATIVE, ZH_SMALL, ZH_WEEKDAYS, ZH_YEAR_WORDS,
)

__all__ = ["NORMALIZER_ID", "Granularity", "TimeMention", "normalize_time", "resolve_time_phrase"]
NORMALIZER_ID = "timenorm-v1"


@dataclass(frozen=True)
class TimeMention:
    """A time expression found in a text and the absolute span it names."""

    expression: str  # as written, e.g. "yesterday 8pm" or "上周五"
    start: datetime  # timezone-aware, inclusive
    end: datetime  # timezone-aware, exclusive
    granularity: Granularity
    span: tuple[int, int]  # character offsets of ``expression`` in the text

    @property
    def iso(self) -> str:
        """A compact ISO-8601 rendering: ``2022``, ``2023-04``, ``2023-05-09``,
        ``2023-05-01/2023-05-07`` (inclusive dates), ``2023-05-09T20:00+08:00``, or a
        ``start/end`` datetime interval for a part of the day."""
        if self.granularity == "year":
            return f"{self.start.year:04d}"
        if self.granularity == "month":
            return f"{self.start.year:04d}-{self.start.month:02d}"
        if self.granularity in ("day", "week"):
            first, last = self.start.date(), (self.end - timedelta(days=1)).date()
            return first.isoformat() if first == last else f"{first.isoformat()}/{last.isoformat()}"
        if self.granularity == "hour":
            return self.start.isoformat(timespec="minutes")
        return f"{self.start.isoformat(timespec='minutes')}/{self.end.isoformat(timespec='minutes')}"


# The rules: a pattern and how a match resolves. Leftmost-longest matches win.


class _Rule(NamedTuple):
    language: Literal["en", "zh"]
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], datetime], Hit | None]


def _en(pattern: str, resolve: Callable[[re.Match[str], datetime], Hit | None]) -> _Rule:
    return _Rule("en", re.compile(pattern, re.IGNORECASE), resolve)


def _zh(pattern: str, resolve: Callable[[re.Match[str], datetime], Hit | None]) -> _Rule:
    return _Rule("zh", re.compile(pattern), resolve)


def _n(m: re.Match[str]) -> int:
    return en_number(m["n"]) or 0


def _month_no(word: str) -> int | None:
    """The month a name stands for; lower-case "may" and "mar" are words, not months ("you may 2x it")."""
    return None if word in ("may", "mar") else MONTHS[word.lower()]


def _year_of(m: re.Match[str]) -> int | None:
    return int(m["y"]) if m["y"] else None


_UNIT_EN = r"(?P<u>hour|day|weekend|week|month|year)s?\b"
_RULES: tuple[_Rule, ...] = (
    _en(r"\bthe\s+day\s+before\s+yesterday\b", lambda m, r: shift(r, -2, "day")),
    _en(r"\bthe\s+day\s+after\s+tomorrow\b", lambda m, r: shift(r, 2, "day")),
    _en(r"\b(?P<w>yesterday|today|tomorrow)\b", lambda m, r: shift(r, EN_DAY_WORDS[m["w"].lower()], "day")),
    _en(r"\btonight\b", lambda m, r: part_span(r, r.date(), "night")),
    _en(r"\blast\s+night\b", lambda m, r: part_span(r, r.date() - timedelta(days=1), "night")),
    _en(r"\bthis\s+(?P<p>morning|afternoon|evening)\b", lambda m, r: part_span(r, r.date(), m["p"].lower())),
    _en(NOT_THE + r"\b(?P<rel>last|this|next)\s+(?P<u>weekend|week|month|year)\b",
        lambda m, r: shift(r, EN_RELATIVE[m["rel"].lower()], m["u"].lower())),
    _en(NOT_THE + r"\b(?P<rel>last|this|next)\s+(?P<wd>" + WEEKDAY + r")\b",
        lambda m, r: _weekday(r, EN_RELATIVE[m["rel"].lower()], EN_WEEKDAYS[m["wd"].lower()])),
    _en(r"\b(?P<n>" + EN_NUM + r")\s+" + _UNIT_EN + r"\s+ago\b", lambda m, r: shift(r, -_n(m), m["u"].lower())),
    _en(r"\bin\s+(?P<n>" + EN_NUM + r")\s+(?!weekend)" + _UNIT_EN, lambda m, r: shift(r, _n(m), m["u"].lower())),
    _en(r"\b(?P<n>" + EN_NUM + r")\s+(?!weekend)" + _UNIT_EN + r"\s+from\s+now\b",
        lambda m, r: shift(r, _n(m), m["u"].lower())),
    _en(r"\b(?P<mon>" + MONTH + r")\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{4})\b)?",
        lambda m, r: calendar_date(r, _year_of(m), _month_no(m["mon"]), int(m["d"]))),
    _en(r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>" + MONTH + r")\b\.?(?:,?\s+(?P<y>\d{4})\b)?",
        lambda m, r: calendar_date(r, _year_of(m), _month_no(m["mon"]), int(m["d"]))),
    _en(r"\b(?P<mon>" + MONTH + r")\.?,?\s+(?P<y>\d{4})\b", lambda m, r: month_span(r, year=int(m["y"]),
                                                                                month=MONTHS[m["mon"].lower()])),
    _en(r"\b(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b",
        lambda m, r: calendar_date(r, int(m["y"]), int(m["m"]), int(m["d"]))),
    _en(r"(?<=\bin\s)(?P<y>(?:19|20)\d{2})\b", lambda m, r: year_span(r, year=int(m["y"]))),
    _zh(r"(?P<y>\d{4})年(?P<m>" + ZH_SMALL + r")月(?P<d>" + ZH_SMALL + r")[日号號]",
        lambda m, r: calendar_date(r, int(m["y"]), zh_number(m["m"]), zh_number(m["d"]))),
    _zh(r"(?P<m>" + ZH_SMALL + r")月(?P<d>" + ZH_SMALL + r")[日号號]",
        lambda m, r: calendar_date(r, None, zh_number(m["m"]), zh_number(m["d"]))),
    _zh(r"(?P<y>\d{4})年(?P<m>" + ZH_SMALL + r")月",
        lambda m, r: month_span(r, year=int(m["y"]), month=zh_number(m["m"])) if _valid_month(m["m"]) else None),
    _zh(r"(?P<y>\d{4})年", lambda m, r: year_span(r, year=int(m["y"]))),
    _zh(r"(?P<w>大前天|大后天|(?<![之以最然午天])前天|(?<![之以最然午天])后天|昨天|昨日|今天|今日|明天|明日)",
        lambda m, r: shift(r, ZH_DAY_WORDS[m["w"]], "day")),
    _zh(r"(?P<d>今|昨|明)(?P<p>晚|早|晨)(?![饭餐点])",
        lambda m, r: part_span(r, r.date() + timedelta(days={"今": 0, "昨": -1, "明": 1}[m["d"]]), m["p"])),
    _zh(r"(?<![马早晚一])(?P<rel>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)"
        r"(?P<wd>末|[一二三四五六日天1-7](?![直起样切定般些下点共个]))?",
        lambda m, r: _zh_week(r, ZH_RELATIVE[m["rel"]], m["wd"])),
    _zh(r"(?<![马早晚一])(?P<rel>上上|上|下下|下|这|本)个?月(?![\d一二三四五六七八九十]+[日号])",
        lambda m, r: shift(r, ZH_RELATIVE[m["rel"]], "month")),
    _zh(r"(?<![之以然午天])(?P<w>大前年|前年|去年|今年|明年|后年)",
        lambda m, r: shift(r, ZH_YEAR_WORDS[m["w"]], "year")),
    _zh(r"(?P<n>" + ZH_NUM + r")(?P<u>个多?月|个?多?(?:星期|礼拜|小时|钟头)|多?(?:天|日|周|年|小时))"
        r"[以之]?(?P<dir>前|后|後)", lambda m, r: _zh_ago(r, m)),
    _zh(r"(?P<part>" + PART_ZH + r")(?:" + ZH_CLOCK + ")", lambda m, r: clock(r, m, r.date(), m["part"])),
)
# The Chinese rules each need a Chinese character to match (年, 月, 天, 周, 前…): a text without one is read by the
# others alone, in the same order (so the same hits, sorted the same).
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # projections.rules.text.CJK_RUN's characters
_RULES_NO_CJK: tuple[_Rule, ...] = tuple(rule for rule in _RULES if rule.language != "zh")
_RULES_ZH: tuple[_Rule, ...] = tuple(rule for rule in _RULES if rule.language == "zh")
# Every English rule needs a digit or one of these words (a day word, a part of the day, a unit, a weekday), each at
# a word's start: a text with none of them has no English time expression, and one search says so. Most turns have
# none (LoCoMo dev: 356 of 2,760 pass; the search costs about a seventh of the rules' own). The same mentions on every
# LoCoMo and REALTALK dev turn (checked once); tests/unit/test_timenorm.py checks it against every rule run. It holds
# in Chinese text too (a Chinese character is a word character: "昨天yesterday" starts no word), where the English
# rules are most of the scans: MemDaily's sentences mostly have neither a digit nor an English word.
_EN_TRIGGER = re.compile(r"\d|\b(?:yesterday|today|tomorrow|tonight|night|morning|afternoon|evening|hours?|days?"
                         r"|weekends?|weeks?|months?|years?|" + WEEKDAY + ")", re.IGNORECASE)
_RULE_SETS = {(True, True): _RULES, (True, False): _RULES_ZH, (False, True): _RULES_NO_CJK, (False, False): ()}


def _weekday(ref: datetime, weeks: int, weekday: int) -> Hit:
    """Weekday ``weekday`` (Monday 0) of the calendar week ``weeks`` away: "last Friday" is in last week."""
    return day_span(ref, monday(ref, weeks) + timedelta(days=weekday))


def _zh_week(ref: datetime, weeks: int, weekday: str | None) -> Hit:
    if weekday is None:
        return shift(ref, weeks, "week")
    if weekday == "末":
        return shift(ref, weeks, "weekend")
    return _weekday(ref, weeks, ZH_WEEKDAYS[weekday])


def _valid_month(text: str) -> bool:
    return 1 <= (zh_number(text) or 0) <= 12


def _zh_ago(ref: datetime, m: re.Match[str]) -> Hit | None:
    n = zh_number(m["n"])
    if n is None:
        return None
    return shift(ref, -n if m["dir"] == "前" else n, zh_unit(m["u"]))


# A clock time or part of the day that refines a day: "yesterday 8pm", "tomorrow morning", "昨天晚上8点".
_EN_AFTER = re.compile(r"(?:\s+(?:in\s+the\s+)?(?P<part>" + PART_EN + r")\b)?(?:,?\s+" + EN_CLOCK + ")?",
                       re.IGNORECASE)
_EN_BARE = re.compile(r"\s+(?:at|around)\s+(?P<h>\d{1,2})\b(?!\s*[ap]\.?m|:)", re.IGNORECASE)
_EN_BEFORE = re.compile(EN_CLOCK + r"\s+(?:on\s+)?$", re.IGNORECASE)  # "at 8pm yesterday"
_ZH_AFTER = re.compile(r"(?P<part>" + PART_ZH + r")?(?:" + ZH_CLOCK + ")?")


def _has_clock(match: re.Match[str] | None) -> bool:
    return match is not None and any(match.groupdict().get(k) for k in ("h", "h24", "noon"))


def _refine(text: str, start: int, end: int, hit: Hit, rule: _Rule, ref: datetime) -> tuple[int, int, Hit]:
    """Extend a day (or a part of one) by the clock time or part of the day written next to it."""
    if hit.day is None:
        return start, end, hit
    after = (_ZH_AFTER if rule.language == "zh" else _EN_AFTER).match(text, end)
    written_part = after["part"].lower() if after["part"] else None
    if hit.part and written_part:  # "tonight evening": leave it alone
        return start, end, hit
    part = written_part or hit.part
    if _has_clock(after) and (clocked := clock(ref, after, hit.day, part)):
        return start, after.end(), clocked
    if rule.language == "en" and part and (bare := _EN_BARE.match(text, after.end())):
        if clocked := clock(ref, bare, hit.day, part):  # "tonight at 11": the part says p.m.
            return start, bare.end(), clocked
    if written_part:
        return start, after.start("part") + len(written_part), part_span(ref, hit.day, written_part)
    if rule.language == "en" and (before := _EN_BEFORE.search(text, 0, start)) and before.end() == start:
        if clocked := clock(ref, before, hit.day, hit.part):
            return before.start(), end, clocked
    return start, end, hit


def _require_aware(reference: datetime) -> None:
    if not isinstance(reference, datetime) or reference.tzinfo is None or reference.utcoffset() is None:
        raise ValueError(
            f"reference must be a timezone-aware datetime (got {reference!r}); pass the message time with its "
            "offset, e.g. datetime(2023, 5, 10, 14, 0, tzinfo=timezone(timedelta(hours=8)))"
        )


def normalize_time(text: str, reference: datetime) -> list[TimeMention]:
    """Every time expression in ``text``, resolved against ``reference``, in text order, without overlaps.

    ``reference`` must be timezone-aware; the spans keep its ``tzinfo``.
    """
    _require_aware(reference)
    hits: list[tuple[int, int, Hit]] = []
    # Each rule set keeps the rules' order, so the hits (sorted stably below) come in the same order.
    for rule in _RULE_SETS[_CJK.search(text) is not None, _EN_TRIGGER.search(text) is not None]:
        for match in rule.pattern.finditer(text):
            if (hit := rule.resolve(match, reference)) is not None:
                hits.append(_refine(text, match.start(), match.end(), hit, rule, reference))
    hits.sort(key=lambda h: (h[0], h[0] - h[1]))
    mentions: list[TimeMention] = []
    for start, end, hit in hits:
        if not mentions or start >= mentions[-1].span[1]:
            mentions.append(TimeMention(text[start:end], hit.start, hit.end, hit.granularity, (start, end)))
    return mentions


_FILLER = re.compile(PHRASE_FILLER, re.IGNORECASE)
_EXAMPLES = ("'yesterday 8pm', 'last week', 'two weeks ago', 'last Friday', 'May 7, 2023', "
             "'昨天晚上', '上周', '三天前' or '2023年5月7日'")


def resolve_time_phrase(phrase: str, reference: datetime) -> TimeMention:
    """The one time expression that ``phrase`` consists of; raise ``ValueError`` saying how to fix it otherwise.

    Fillers around it are allowed ("since last week", "在上周"); anything else is not.
    """
    _require_aware(reference)
    if not isinstance(phrase, str) or not phrase.strip():
        raise ValueError(f"no time phrase given (got {phrase!r}); give one such as {_EXAMPLES}")
    mentions = normalize_time(phrase, reference)
    if not mentions:
        raise ValueError(f"could not read {phrase!r} as a time; use a phrase such as {_EXAMPLES}, "
                         "or an ISO date like 2023-05-07")
    if len(mentions) > 1:
        found = ", ".join(repr(m.expression) for m in mentions)
        raise ValueError(f"{phrase!r} holds {len(mentions)} time expressions ({found}); give exactly one")
    (mention,) = mentions
    rest = phrase[: mention.span[0]] + " " + phrase[mention.span[1]:]
    if not _FILLER.match(rest):
        raise ValueError(f"only {mention.expression!r} in {phrase!r} is a time expression; remove "
                         f"{rest.strip()!r} or rephrase it as one of {_EXAMPLES}")
    return mention
