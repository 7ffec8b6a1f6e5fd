"""Calendar arithmetic and numbers for :mod:`projections.rules.timenorm`.

Every function works on the reference's wall clock and keeps its ``tzinfo``;
spans are half-open ``[start, end)``. Pure functions, no clock of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Literal

from projections.rules.timenorm_rules import EN_NUMBERS, NIGHT_PARTS, PARTS_OF_DAY, PM_PARTS, ZH_DIGITS

Granularity = Literal["hour", "part_of_day", "day", "week", "month", "year"]


@dataclass(frozen=True)
class Hit:
    start: datetime
    end: datetime
    granularity: Granularity
    day: date | None = None  # set when a clock time or part of the day may refine it
    part: str | None = None


# Calendar arithmetic, all on the reference's wall clock.


def at(tz: tzinfo, day: date, hour: int = 0, minute: int = 0) -> datetime:
    extra, hour = divmod(hour, 24)
    return datetime.combine(day + timedelta(days=extra), time(hour, minute), tzinfo=tz)


def day_span(ref: datetime, first: date, count: int = 1, granularity: Granularity = "day") -> Hit:
    tz = ref.tzinfo
    return Hit(at(tz, first), at(tz, first + timedelta(days=count)), granularity, first if count == 1 else None)


def monday(ref: datetime, weeks: int) -> date:
    return ref.date() - timedelta(days=ref.weekday()) + timedelta(weeks=weeks)


def month_span(ref: datetime, months: int = 0, year: int | None = None, month: int | None = None) -> Hit:
    index = (year if year is not None else ref.year) * 12 + (month or ref.month) - 1 + months
    y, m = divmod(index, 12)
    ny, nm = divmod(index + 1, 12)
    return Hit(at(ref.tzinfo, date(y, m + 1, 1)), at(ref.tzinfo, date(ny, nm + 1, 1)), "month")


def year_span(ref: datetime, years: int = 0, year: int | None = None) -> Hit:
    y = (year if year is not None else ref.year) + years
    return Hit(at(ref.tzinfo, date(y, 1, 1)), at(ref.tzinfo, date(y + 1, 1, 1)), "year")


def shift(ref: datetime, n: int, unit: str) -> Hit:
    """The calendar ``unit`` that is ``n`` units away from the reference's own (negative: in the past)."""
    if unit == "hour":
        hour = (ref + timedelta(hours=n)).replace(minute=0, second=0, microsecond=0)
        return Hit(hour, hour + timedelta(hours=1), "hour")
    if unit == "day":
        return day_span(ref, ref.date() + timedelta(days=n))
    if unit == "week":
        return day_span(ref, monday(ref, n), 7, "week")
    if unit == "weekend":
        return day_span(ref, monday(ref, n) + timedelta(days=5), 2)
    if unit == "month":
        return month_span(ref, n)
    return year_span(ref, n)


def calendar_date(ref: datetime, year: int | None, month: int | None, day: int | None) -> Hit | None:
    try:
        return day_span(ref, date(year if year is not None else ref.year, month or 0, day or 0))
    except ValueError:  # "February 30", "13月5日": not a date, so not a mention
        return None


def part_span(ref: datetime, day: date, part: str) -> Hit:
    first, end = PARTS_OF_DAY[part]
    return Hit(at(ref.tzinfo, day, first), at(ref.tzinfo, day, end), "part_of_day", day, part)


def timed(ref: datetime, day: date, part: str | None, hour: int, minute: int, ap: str | None) -> Hit | None:
    """A clock time on ``day``, read in the light of the part of the day ("晚上8点" is 20:00)."""
    if ap == "p" and hour < 12:
        hour += 12
    elif ap == "a" and hour == 12:
        hour = 0
    elif ap is None and part in PM_PARTS:
        if hour == 12 and part not in ("afternoon", "下午"):
            hour = 24  # "晚上12点" is midnight
        elif part in NIGHT_PARTS and hour < 6:
            hour += 24  # "last night at 2" is after midnight
        elif hour < 12:
            hour += 12
    elif ap is None and part == "中午" and hour < 6:
        hour += 12
    if ap == "a" and part in NIGHT_PARTS and hour < 6:
        hour += 24
    if not (0 <= hour <= 30 and 0 <= minute < 60):
        return None
    start = at(ref.tzinfo, day, hour, minute)
    return Hit(start, start + timedelta(hours=1), "hour")


# Numbers.


def en_number(word: str) -> int | None:
    word = re.sub(r"\s+", " ", word.strip().lower())
    return int(word) if word.isdigit() else EN_NUMBERS.get(word)


def zh_number(text: str) -> int | None:
    """``"三"`` → 3, ``"十五"`` → 15, ``"二十"`` → 20, ``"两"`` → 2, ``"二〇二三"`` → 2023, ``"12"`` → 12."""
    if text.isdigit():
        return int(text)
    if "百" in text:
        hundreds, _, rest = text.partition("百")
        head, tail = zh_number(hundreds or "一"), zh_number(rest) if rest else 0
        return None if head is None or tail is None else head * 100 + tail
    if "十" in text:
        tens, _, ones = text.partition("十")
        if (tens and tens not in ZH_DIGITS) or (ones and ones not in ZH_DIGITS):
            return None
        return (ZH_DIGITS[tens] if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)
    if not text or any(c not in ZH_DIGITS for c in text):
        return None
    return int("".join(str(ZH_DIGITS[c]) for c in text))


def zh_unit(unit: str) -> str:
    for marker, name in (("月", "month"), ("年", "year"), ("小时", "hour"), ("钟头", "hour"), ("天", "day"),
                         ("日", "day")):
        if marker in unit:
            return name
    return "week"  # 周, 星期, 礼拜


def clock(ref: datetime, m: re.Match[str], day: date, part: str | None) -> Hit | None:
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    if "noon" in g:
        return timed(ref, day, None, 12, 0, None)
    if "h24" in g:
        return timed(ref, day, None, int(g["h24"]), int(g["mi24"]), None)
    hour = zh_number(g["h"]) if "h" in g else None
    if hour is None:
        return None
    minute = 30 if "half" in g else {"一刻": 15, "三刻": 45}.get(g.get("quarter", ""), 0)
    if "mi" in g:
        minute = zh_number(g["mi"]) if g["mi"] else 0
        if minute is None:
            return None
    ap = g["ap"].lower() if g.get("ap") else None
    return timed(ref, day, part, hour, minute, ap)
