"""First-person event and fact notes (events-v1): the speaker's name for "I", absolute dates, EN and ZH."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from projections.rules.event_notes import EXTRACTOR_ID, event_notes

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a LGBTQ support group yesterday and it was so powerful.",
         ["Caroline went to a LGBTQ support group yesterday (2023-05-07)"]),
        ("My sister adopted a puppy last week.", ["Caroline's sister adopted a puppy last week (2023-05-01/2023-05-07)"]),
        ("我昨天去了瑜伽课，感觉很放松。", ["Caroline昨天去了瑜伽课 (2023-05-07)"]),
    ],
)
def test_a_first_person_event_becomes_a_standalone_dated_fact(text, expected):
    notes = event_notes(text, speaker="Caroline", occurred_at=AT)
    assert [n.text for n in notes] == expected
    assert all((n.category, n.subject, n.extractor) == ("fact", "Caroline", EXTRACTOR_ID) for n in notes)
    assert all("caroline" not in n.key_terms for n in notes)


@pytest.mark.parametrize("text", ["Did you go to the support group?", "If I went there I would be happy.",
                                  "I think it is great!", "你去过瑜伽课吗？"])
def test_questions_hypotheticals_and_opinions_state_no_fact(text):
    assert event_notes(text, speaker="Caroline", occurred_at=AT) == ()


def test_without_a_speaker_the_subject_is_the_user_and_the_language_is_kept():
    [en] = event_notes("I adopted a cat named Miso last weekend.", speaker=None, occurred_at=AT)
    assert en.text.startswith("User adopted a cat named Miso") and en.language == "en"
    [zh] = event_notes("我昨天去了瑜伽课", speaker=None, occurred_at=AT)
    assert zh.text.startswith("user昨天去了瑜伽课") and zh.language == "zh"
