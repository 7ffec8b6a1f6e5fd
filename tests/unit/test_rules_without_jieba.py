"""The offline rules read a text without Chinese without jieba, and exactly as with it."""

from __future__ import annotations

import subprocess
import sys

from projections.rules import contradiction as ct
from projections.rules.extraction import generic_latin_terms, generic_terms, key_terms
from projections.rules.text import has_cjk


def test_latin_generic_terms_are_the_generic_terms_without_chinese():
    assert generic_latin_terms() == {t for t in generic_terms() if not has_cjk(t)}
    assert any(has_cjk(t) for t in generic_terms())  # the full set does hold Chinese tokens


def test_latin_tables_are_the_tables_without_chinese():
    full, latin = ct._tables(), ct._latin_tables()
    assert latin[0] == {t: k for t, k in full[0].items() if not has_cjk(t)}
    assert latin[1] == {t for t in full[1] if not has_cjk(t)}
    assert latin[2] == {t for t in full[2] if not has_cjk(t)}


def test_kinds_and_states_of_latin_terms_match_the_full_tables():
    kinds, _, states = ct._tables()
    for term in [*list(kinds)[:300], *list(states), "postgresql", "coffee", "tired", "xyzzy", "很累", "咖啡"]:
        assert ct._term_kinds(term) == frozenset(k for w, ks in kinds.items() if ct._hit(w, term) for k in ks)
        word = ct._DEGREE.sub("", term) or term
        assert ct._state_words(term) == frozenset(
            s for s in states if word == s or (len(s) > 1 and has_cjk(s) and s in word))


def test_english_messages_never_load_jieba():
    code = (
        "import jieba\n"
        "from projections.rules.classify import classification_event\n"
        "from projections.rules.extraction import extract_notes\n"
        "from projections.rules.contradiction import detect\n"
        "from projections.decisions.note_ops import decide_note_operations\n"
        "texts = ['I prefer PostgreSQL for the backend', 'We switched to MySQL and dropped PostgreSQL',\n"
        "         'I am so tired today', 'My favourite colour is blue', 'I moved to Berlin last year']\n"
        "for t in texts:\n"
        "    classification_event('m', t)\n"
        "    for n in extract_notes(t):\n"
        "        detect(n, [])\n"
        "    detect(t, [])\n"
        "print(jieba.dt.initialized)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_key_terms_of_chinese_still_drop_chinese_generic_words():
    assert "喜欢" not in key_terms("我喜欢咖啡")
    assert "咖啡" in key_terms("我喜欢咖啡")


def test_time_rules_for_text_without_chinese_find_what_all_rules_find(monkeypatch):
    from datetime import datetime, timezone

    from projections.rules import timenorm

    ref = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    texts = ["I went there yesterday at 8pm and again last Friday", "2023-05-07 or May 7, 2023, in 2021",
             "two weeks ago, the day before yesterday, this morning", "in 3 days; 12 months ago; tonight at 11",
             "nothing here", "7 8 2023 5 12 1 2 3 10"]
    fast = [timenorm.normalize_time(t, ref) for t in texts]
    assert {r.language for r in timenorm._RULES_NO_CJK} == {"en"}
    assert len(timenorm._RULES_NO_CJK) < len(timenorm._RULES)
    monkeypatch.setattr(timenorm, "_RULES_NO_CJK", timenorm._RULES)
    assert [timenorm.normalize_time(t, ref) for t in texts] == fast
    assert any(fast)


def test_english_graph_reading_without_apostrophes_skips_only_contractions_that_cannot_match(monkeypatch):
    from projections.rules import graph_english as ge

    assert [p.pattern for p, _ in ge._CONTRACTIONS_NO_APOSTROPHE] == [r"\bgonna\b", r"\bgotta\b"]
    clauses = ["I am gonna adopt a dog next month", "My sister and I went camping with the kids",
               "I've been reading a book about whales", "we gotta visit Paris", "Melanie painted a sunset",
               "I'm so proud of my son, he won't stop painting"]
    fast = [ge.read_english(c, speaker="Caroline", inherited=None, tense=None) for c in clauses]
    monkeypatch.setattr(ge, "_CONTRACTIONS_NO_APOSTROPHE", ge._CONTRACTIONS)
    assert [ge.read_english(c, speaker="Caroline", inherited=None, tense=None) for c in clauses] == fast
    assert any(readings for readings, _ in fast)
