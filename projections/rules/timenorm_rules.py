"""Vocabulary and regex fragments of ``timenorm-v1``, English and Chinese.

Data only; :mod:`projections.rules.timenorm` turns matches into absolute spans.
Changing a table changes what ``normalize_time`` returns.
"""

from __future__ import annotations

EN_NUMBERS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "a couple": 2, "a couple of": 2, "couple of": 2,
}
ZH_DIGITS: dict[str, int] = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
                             "八": 8, "九": 9}

MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
# Monday is 0, as in ``date.weekday()``: weeks start on Monday.
EN_WEEKDAYS: dict[str, int] = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
                               "saturday": 5, "sunday": 6}
ZH_WEEKDAYS: dict[str, int] = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                               "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}

# Day offsets of single words.
EN_DAY_WORDS: dict[str, int] = {"yesterday": -1, "today": 0, "tomorrow": 1}
ZH_DAY_WORDS: dict[str, int] = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "今天": 0, "今日": 0,
                                "明天": 1, "明日": 1, "后天": 2, "大后天": 3}
ZH_YEAR_WORDS: dict[str, int] = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
# 上 / 下 / 这 before 周, 星期, 礼拜 or 月: week or month offsets.
ZH_RELATIVE: dict[str, int] = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
EN_RELATIVE: dict[str, int] = {"last": -1, "this": 0, "next": 1}

# Parts of the day as (first hour, end hour) on the anchor day; an end past 24 runs into the next
# morning, so "last night" on Wednesday is Tuesday 18:00 to Wednesday 06:00.
PARTS_OF_DAY: dict[str, tuple[int, int]] = {
    "morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30),
    "凌晨": (0, 6), "清晨": (5, 9), "早上": (6, 12), "早晨": (6, 12), "上午": (6, 12), "中午": (11, 13),
    "下午": (12, 18), "傍晚": (17, 19), "晚上": (18, 24), "夜里": (18, 30), "夜间": (18, 30),
    # Short forms after 今 / 昨 / 明: 今晚 is tonight, 今早 this morning.
    "晚": (18, 30), "早": (6, 12), "晨": (6, 12),
}
# Parts in which a bare clock hour below 12 is read as p.m. ("晚上8点" is 20:00).
PM_PARTS = frozenset({"afternoon", "evening", "night", "下午", "傍晚", "晚上", "夜里", "夜间", "晚"})
NIGHT_PARTS = frozenset({"night", "夜里", "夜间", "晚"})  # "last night at 2am" is after midnight

# Regex fragments.


def alternation(words) -> str:
    """A non-capturing alternation, longest first so "sept" wins over "sep"."""
    return "(?:" + "|".join(sorted((w.replace(" ", r"\s+") for w in words), key=len, reverse=True)) + ")"


EN_NUM = r"(?:\d{1,3}|" + alternation(EN_NUMBERS) + r")\b"
ZH_NUM = r"(?:\d{1,3}|[零〇一二两三四五六七八九十百]{1,4})"
ZH_SMALL = r"(?:\d{1,2}|[一二两三四五六七八九十]{1,3})"  # a month or day of the month
MONTH = alternation(MONTHS)
WEEKDAY = alternation(EN_WEEKDAYS)
PART_EN = r"(?:morning|afternoon|evening|night)"
PART_ZH = alternation(p for p in PARTS_OF_DAY if len(p) == 2)
NOT_THE = r"(?<!\bthe\s)"  # "the last week of May" is not last week

# A clock time after or before a day: "8pm", "8:30 p.m.", "at 20:00", "at noon".
EN_CLOCK = (r"(?:(?:at|around|about|by)\s+)?(?:(?P<h>\d{1,2})(?::(?P<mi>[0-5]\d))?\s*(?P<ap>[ap])\.?m\b\.?"
            r"|(?P<h24>[01]?\d|2[0-3]):(?P<mi24>[0-5]\d)\b|(?P<noon>noon)\b)")
# "8点", "八点半", "8点15分", "20:30"; "一点也不" (not at all) is not one o'clock.
ZH_CLOCK = (r"(?:(?P<h>\d{1,2}|[零一二两三四五六七八九十]{1,3})[点點时](?![都也儿])"
            r"(?:(?P<half>半)|(?P<quarter>一刻|三刻)|(?P<mi>\d{1,2}|[零一二三四五六七八九十]{1,3})分)?钟?"
            r"|(?P<h24>[01]?\d|2[0-3])[:：](?P<mi24>[0-5]\d))")

# What may stand around a phrase that ``resolve_time_phrase`` is given, e.g. "since last week".
PHRASE_FILLER = r"^(?:\s|[,.;:!?，。；：！？]|\b(?:on|in|at|since|around|about|during|from|until|by)\b|在|从|于)*$"
