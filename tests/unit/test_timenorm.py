"""Relative time expressions resolved against the message time (timenorm-v1), English and Chinese."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.rules.text import has_cjk
from projections.rules.timenorm import TimeMention, normalize_time, resolve_time_phrase

CST = timezone(timedelta(hours=8))
REF = datetime(2023, 5, 10, 14, 0, tzinfo=CST)  # a Wednesday; its week runs Mon 8 May to Sun 14 May


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=CST)


# (phrase, start, end, granularity): every span is half-open, on the reference's wall clock.
CASES = [
    ("today", at(2023, 5, 10), at(2023, 5, 11), "day"),
    ("yesterday", at(2023, 5, 9), at(2023, 5, 10), "day"),
    ("tomorrow", at(2023, 5, 11), at(2023, 5, 12), "day"),
    ("the day before yesterday", at(2023, 5, 8), at(2023, 5, 9), "day"),
    ("the day after tomorrow", at(2023, 5, 12), at(2023, 5, 13), "day"),
    ("yesterday 8pm", at(2023, 5, 9, 20), at(2023, 5, 9, 21), "hour"),
    ("yesterday at 8:30 p.m.", at(2023, 5, 9, 20, 30), at(2023, 5, 9, 21, 30), "hour"),
    ("at 9am tomorrow", at(2023, 5, 11, 9), at(2023, 5, 11, 10), "hour"),
    ("this morning", at(2023, 5, 10, 6), at(2023, 5, 10, 12), "part_of_day"),
    ("tonight", at(2023, 5, 10, 18), at(2023, 5, 11, 6), "part_of_day"),
    ("tonight at 11", at(2023, 5, 10, 23), at(2023, 5, 11), "hour"),
    ("last night", at(2023, 5, 9, 18), at(2023, 5, 10, 6), "part_of_day"),
    ("yesterday evening", at(2023, 5, 9, 18), at(2023, 5, 10), "part_of_day"),
    ("tomorrow morning", at(2023, 5, 11, 6), at(2023, 5, 11, 12), "part_of_day"),
    ("last week", at(2023, 5, 1), at(2023, 5, 8), "week"),
    ("this week", at(2023, 5, 8), at(2023, 5, 15), "week"),
    ("next week", at(2023, 5, 15), at(2023, 5, 22), "week"),
    ("last month", at(2023, 4, 1), at(2023, 5, 1), "month"),
    ("next month", at(2023, 6, 1), at(2023, 7, 1), "month"),
    ("last year", at(2022, 1, 1), at(2023, 1, 1), "year"),
    ("3 days ago", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("two weeks ago", at(2023, 4, 24), at(2023, 5, 1), "week"),
    ("a week ago", at(2023, 5, 1), at(2023, 5, 8), "week"),
    ("5 months ago", at(2022, 12, 1), at(2023, 1, 1), "month"),
    ("ten years ago", at(2013, 1, 1), at(2014, 1, 1), "year"),
    ("2 hours ago", at(2023, 5, 10, 12), at(2023, 5, 10, 13), "hour"),
    ("in 3 days", at(2023, 5, 13), at(2023, 5, 14), "day"),
    ("in two weeks", at(2023, 5, 22), at(2023, 5, 29), "week"),
    ("last Friday", at(2023, 5, 5), at(2023, 5, 6), "day"),
    ("last Monday", at(2023, 5, 1), at(2023, 5, 2), "day"),
    ("this Friday", at(2023, 5, 12), at(2023, 5, 13), "day"),
    ("next Monday", at(2023, 5, 15), at(2023, 5, 16), "day"),
    ("last Friday night", at(2023, 5, 5, 18), at(2023, 5, 6, 6), "part_of_day"),
    ("this weekend", at(2023, 5, 13), at(2023, 5, 15), "day"),
    ("last weekend", at(2023, 5, 6), at(2023, 5, 8), "day"),
    ("two weekends ago", at(2023, 4, 29), at(2023, 5, 1), "day"),
    ("May 7, 2023", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("7 May 2023", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("23 March, 2023", at(2023, 3, 23), at(2023, 3, 24), "day"),
    ("May 7", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("June 2022", at(2022, 6, 1), at(2022, 7, 1), "month"),
    ("2023-05-07", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("今天", at(2023, 5, 10), at(2023, 5, 11), "day"),
    ("昨天", at(2023, 5, 9), at(2023, 5, 10), "day"),
    ("前天", at(2023, 5, 8), at(2023, 5, 9), "day"),
    ("明天", at(2023, 5, 11), at(2023, 5, 12), "day"),
    ("后天", at(2023, 5, 12), at(2023, 5, 13), "day"),
    ("昨天晚上", at(2023, 5, 9, 18), at(2023, 5, 10), "part_of_day"),
    ("昨天晚上8点", at(2023, 5, 9, 20), at(2023, 5, 9, 21), "hour"),
    ("昨晚", at(2023, 5, 9, 18), at(2023, 5, 10, 6), "part_of_day"),
    ("今晚", at(2023, 5, 10, 18), at(2023, 5, 11, 6), "part_of_day"),
    ("今天早上", at(2023, 5, 10, 6), at(2023, 5, 10, 12), "part_of_day"),
    ("明天下午三点", at(2023, 5, 11, 15), at(2023, 5, 11, 16), "hour"),
    ("晚上8点半", at(2023, 5, 10, 20, 30), at(2023, 5, 10, 21, 30), "hour"),
    ("上周", at(2023, 5, 1), at(2023, 5, 8), "week"),
    ("下周", at(2023, 5, 15), at(2023, 5, 22), "week"),
    ("这周", at(2023, 5, 8), at(2023, 5, 15), "week"),
    ("上个月", at(2023, 4, 1), at(2023, 5, 1), "month"),
    ("下个月", at(2023, 6, 1), at(2023, 7, 1), "month"),
    ("去年", at(2022, 1, 1), at(2023, 1, 1), "year"),
    ("前年", at(2021, 1, 1), at(2022, 1, 1), "year"),
    ("上周五", at(2023, 5, 5), at(2023, 5, 6), "day"),
    ("上星期天", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("下周一", at(2023, 5, 15), at(2023, 5, 16), "day"),
    ("这周末", at(2023, 5, 13), at(2023, 5, 15), "day"),
    ("上周末", at(2023, 5, 6), at(2023, 5, 8), "day"),
    ("3天前", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("三天前", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("十天后", at(2023, 5, 20), at(2023, 5, 21), "day"),
    ("两周前", at(2023, 4, 24), at(2023, 5, 1), "week"),
    ("三个月前", at(2023, 2, 1), at(2023, 3, 1), "month"),
    ("两年前", at(2021, 1, 1), at(2022, 1, 1), "year"),
    ("2023年5月7日", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("5月7日", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("五月七号", at(2023, 5, 7), at(2023, 5, 8), "day"),
    ("2022年12月", at(2022, 12, 1), at(2023, 1, 1), "month"),
]


@pytest.mark.parametrize(("phrase", "start", "end", "granularity"), CASES, ids=[c[0] for c in CASES])
def test_a_phrase_resolves_to_an_exact_span(phrase, start, end, granularity):
    (mention,) = normalize_time(phrase, REF)
    assert (mention.start, mention.end, mention.granularity) == (start, end, granularity)
    assert mention.expression == phrase and mention.span == (0, len(phrase))
    assert mention.start.tzinfo is CST and mention.end.tzinfo is CST


def test_the_table_covers_both_languages_and_every_granularity():
    chinese = [c for c in CASES if has_cjk(c[0])]
    assert len(chinese) >= 30 and len(CASES) - len(chinese) >= 30
    assert {c[3] for c in chinese} == {c[3] for c in CASES} == {"hour", "part_of_day", "day", "week", "month", "year"}


def test_mentions_are_found_inside_a_sentence_in_order():
    text = "I went to a support group yesterday 8pm and I'm seeing her again next Monday."
    mentions = normalize_time(text, REF)
    assert [(m.expression, m.iso) for m in mentions] == [
        ("yesterday 8pm", "2023-05-09T20:00+08:00"),
        ("next Monday", "2023-05-15"),
    ]
    assert [text[slice(*m.span)] for m in mentions] == ["yesterday 8pm", "next Monday"]
    zh = normalize_time("我昨天晚上去了瑜伽课，下周一还要去", REF)
    assert [(m.expression, m.granularity) for m in zh] == [("昨天晚上", "part_of_day"), ("下周一", "day")]


def test_iso_renders_each_granularity():
    rendered = {phrase: normalize_time(phrase, REF)[0].iso for phrase in
                ("last year", "last month", "last week", "yesterday", "this weekend", "yesterday 8pm", "last night")}
    assert rendered == {
        "last year": "2022", "last month": "2023-04", "last week": "2023-05-01/2023-05-07",
        "yesterday": "2023-05-09", "this weekend": "2023-05-13/2023-05-14",
        "yesterday 8pm": "2023-05-09T20:00+08:00", "last night": "2023-05-09T18:00+08:00/2023-05-10T06:00+08:00",
    }


@pytest.mark.parametrize("text", [
    "I may 2 go",  # the verb, not the month
    "the last week of May",  # not last week
    "I'll see you on Friday",  # bare weekdays are not resolved (documented)
    "a few days ago",  # vague
    "之后天气很好",  # 之后 + 天气, not 后天
    "马上周末了",  # 马上 + 周末, not 上周末
    "我一点也不累",  # 一点 is "at all", not one o'clock
    "几天前",  # vague
    "",
])
def test_words_that_only_look_like_times_are_not_mentions(text):
    assert normalize_time(text, REF) == []


def test_near_misses_keep_the_real_mention():
    assert [m.expression for m in normalize_time("这周一直在下雨", REF)] == ["这周"]  # 一直, not Monday
    assert [m.expression for m in normalize_time("上周一个朋友来了", REF)] == ["上周"]  # 一个, not Monday
    assert [m.expression for m in normalize_time("我昨天一点也不累", REF)] == ["昨天"]


def test_weeks_start_on_monday_so_last_friday_is_in_the_previous_calendar_week():
    sunday = datetime(2023, 5, 14, 10, tzinfo=CST)
    (friday,) = normalize_time("last Friday", sunday)
    assert friday.start == at(2023, 5, 5)  # not the Friday two days earlier (documented choice)
    (week,) = normalize_time("this week", sunday)
    assert (week.start, week.end) == (at(2023, 5, 8), at(2023, 5, 15))


def test_wall_clock_follows_the_reference_time_zone_across_dst():
    berlin = datetime(2023, 3, 27, 9, tzinfo=ZoneInfo("Europe/Berlin"))  # the Monday after DST began
    (weekend,) = normalize_time("last weekend", berlin)
    assert weekend.start.isoformat() == "2023-03-25T00:00:00+01:00"
    assert weekend.end.isoformat() == "2023-03-27T00:00:00+02:00"
    late = datetime(2023, 5, 10, 1, 0, tzinfo=CST)  # 9 May in UTC: "today" is still 10 May here
    assert normalize_time("today", late)[0].start == at(2023, 5, 10)


def test_resolve_time_phrase_accepts_one_expression_with_fillers():
    assert resolve_time_phrase("  since last week ", REF).iso == "2023-05-01/2023-05-07"
    assert resolve_time_phrase("在上周", REF).iso == "2023-05-01/2023-05-07"
    mention = resolve_time_phrase("yesterday", REF)
    assert isinstance(mention, TimeMention) and mention.start == at(2023, 5, 9)


@pytest.mark.parametrize(("phrase", "says"), [
    ("blah", "could not read 'blah' as a time"),
    ("", "no time phrase given"),
    ("last week and yesterday", "holds 2 time expressions"),
    ("last week's party", "only 'last week'"),
])
def test_resolve_time_phrase_says_what_is_wrong_and_how_to_fix_it(phrase, says):
    with pytest.raises(ValueError) as caught:
        resolve_time_phrase(phrase, REF)
    assert says in str(caught.value)
    assert "yesterday 8pm" in str(caught.value) or "give exactly one" in str(caught.value)  # an example of a fix


def test_a_naive_reference_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        normalize_time("yesterday", datetime(2023, 5, 10, 14))


def test_mentions_are_frozen():
    mention = normalize_time("yesterday", REF)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        mention.start = REF  # type: ignore[misc]


@given(
    reference=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31),
                           timezones=st.sampled_from([timezone.utc, CST, timezone(timedelta(hours=-5))])),
    phrase=st.sampled_from([c[0] for c in CASES]),
)
def test_every_phrase_resolves_to_a_non_empty_span_on_the_reference_clock(reference, phrase):
    (mention,) = normalize_time(phrase, reference)
    assert mention.start < mention.end
    assert mention.start.utcoffset() == reference.utcoffset()


_WORDS = ("I", "we", "went", "there", "the", "a", "an", "in", "on", "at", "of", "last", "this", "next", "ago", "from",
          "now", "day", "days", "week", "weekend", "month", "years", "hours", "morning", "night", "tonight", "today",
          "yesterday", "tomorrow", "Friday", "May", "may", "March", "Dec", "two", "a couple of", "8pm", "8:30", "p.m.",
          "2023", "7", "7th", "2023-05-07", "1999", ",", ".", "birthday", "Monday's", "weekly", "yearly", "dayton")


# Chinese words (time words among them) and pieces glued to English words: "昨天yesterday" starts no English word.
_ZH_WORDS = ("我", "昨天", "上周五", "三天前", "2023年5月7日", "今晚", "去年", "下个月", "晚上8点", "吃了火锅", "，", "。", "在",
             "的", "Friday", "3", "yesterday", "morning")


@given(words=st.lists(st.sampled_from(_WORDS + _ZH_WORDS), max_size=12), glue=st.sampled_from([" ", ""]))
def test_the_english_trigger_only_skips_texts_without_a_mention(words, glue):
    """normalize_time reads a text with the English rules only when a cheap search finds a digit or a time word,
    whether it holds Chinese or not; the mentions are the same as with every rule run on every text."""
    import re

    from projections.rules import timenorm

    text = glue.join(words)
    quick = normalize_time(text, REF)
    saved = timenorm._EN_TRIGGER
    timenorm._EN_TRIGGER = re.compile("")  # matches every text: each rule runs
    try:
        assert normalize_time(text, REF) == quick
    finally:
        timenorm._EN_TRIGGER = saved


def test_every_english_case_passes_the_trigger():
    from projections.rules.timenorm import _EN_TRIGGER

    assert all(_EN_TRIGGER.search(c[0]) for c in CASES if not has_cjk(c[0]))
    assert _EN_TRIGGER.search("Thanks, that sounds lovely!") is None
