from __future__ import annotations

import jieba
import pytest

from projections.rules import dictionaries


def test_languages_are_checked_and_deduplicated():
    assert dictionaries.check_languages("zh") == ("zh",)
    assert dictionaries.check_languages(["en", "zh", "en"]) == ("en", "zh")
    with pytest.raises(ValueError, match=r"unknown language\(s\) \['fr'\]"):
        dictionaries.check_languages(("en", "fr"))


def test_loading_chinese_initialises_jieba_and_the_tagger():
    dictionaries.load(("zh",), tagger=True)
    assert jieba.dt.initialized
    import sys

    assert "jieba.posseg" in sys.modules
    assert dictionaries.load(("zh",), tagger=True) < 0.05  # loaded once: a second call costs nothing


def test_english_loads_nothing():
    assert dictionaries.load(("en",)) < 0.01
