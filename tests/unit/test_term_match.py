"""How two notes' key terms match (exactly, or Chinese terms by containment), and the matcher's memos."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projections.rules import term_match
from projections.rules.extraction import forget_text_caches

_TERMS = st.lists(st.sampled_from(["咖啡", "喝咖啡", "咖", "啡店", "咖啡店", "茶", "postgresql", "go", "咖啡go", "北京"]),
                  max_size=6)


@given(_TERMS, _TERMS)
def test_matches_is_the_pairwise_hit_test(a, b):
    """The memoised probes and postings give exactly the terms of ``a`` that :func:`hit` some term of ``b``."""
    assert term_match.matches(a, b) == tuple(x for x in a if any(term_match.hit(x, y) for y in b))


def test_forget_text_caches_empties_the_matchers_memos():
    term_match.matches(("喝咖啡", "茶"), ("咖啡",))
    assert term_match.probes.cache_info().currsize and term_match.index.cache_info().currsize
    forget_text_caches()
    assert not term_match.probes.cache_info().currsize and not term_match.index.cache_info().currsize


def test_forget_text_caches_empties_the_contradiction_and_graph_conflict_memos():
    """The statements the contradiction rules read from notes and candidates, and the graph conflict check's
    label terms, hold user text: an erasure empties them too (``text_memo``)."""
    from projections.decisions import graph_conflicts
    from projections.rules import contradiction
    from projections.rules.extraction import extract_notes

    [candidate] = extract_notes("I live in Boston.", speaker="Mel")
    [old] = extract_notes("我住在北京。", speaker="Mel")
    contradiction.detect(candidate, [contradiction.ActiveNote.from_candidate("n1", old)])
    graph_conflicts._terms("sister's city")
    memos = (contradiction._from_note, contradiction._candidate_statement, graph_conflicts._terms)
    assert all(memo.cache_info().currsize for memo in memos)
    forget_text_caches()
    assert not any(memo.cache_info().currsize for memo in memos)


def test_forget_text_caches_empties_the_note_coverage_memos():
    """A context's coverage check keeps each turn's clauses and their terms (user text): an erasure empties them."""
    from projections.queries import note_coverage

    assert note_coverage.uncarried("I'm vegetarian and I hate cilantro.", ["Alice hates cilantro"])
    assert note_coverage._stated.cache_info().currsize
    forget_text_caches()
    assert not note_coverage._stated.cache_info().currsize
