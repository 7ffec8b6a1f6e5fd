"""What keeps the learning loop from over-reaching (pure, no store): a penalty's topic test, EN and ZH, and the
Molt verdict that needs the best proposal to gain on the held-out recorded queries too."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events.learning_events import MemoryAdjusted, PolicyChanged, PolicyProposalRejected
from projections.decisions.molt import DEFAULT_MOLT, halves, verdict
from projections.rules.text import same_topic

AT = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(("a", "b", "same"), [
    ("What did Mel paint?", "What has Mel painted lately?", True),  # a paraphrase
    ("where does my sister work as a nurse?", "Where does my sister work as nurse", True),
    ("What did Caroline research?", "When did Caroline go to the LGBTQ support group?", False),  # the name alone
    ("我喜欢吃什么水果？", "我爱吃什么水果", True),
    ("我妹妹在哪里工作？", "我妹妹喜欢什么颜色？", False),
    ("", "What did Mel paint?", False),
])
def test_same_topic(a, b, same):
    assert same_topic(a, b) is same and same_topic(b, a) is same


def test_only_a_penalty_is_scoped():
    common = dict(target_ids=("m1",), signal_ids=("s1",), at=AT, reason="r", dispatcher="d", scope="q")
    assert MemoryAdjusted(action="penalty", layer="working", factor=0.5, **common).scope == "q"
    with pytest.raises(ValueError, match="only a penalty"):
        MemoryAdjusted(action="invalidate", layer="stable", **common)


def test_the_best_proposal_is_applied_only_when_it_also_gains_on_the_held_out_queries():
    assert halves(list(range(7))) == ([0, 2, 4, 6], [1, 3, 5])
    evaluated = [({"lexical_weight": 2.0}, 0.8), ({"note_weight": 0.0}, 0.6)]
    current = {"lexical_weight": 1.3, "note_weight": 0.5}

    def decide(held_out):
        return verdict(0.5, evaluated, current, 4, "forced", AT, DEFAULT_MOLT, held_out=held_out)

    applied = decide((0.4, 0.5, 4))
    assert isinstance(applied, PolicyChanged) and applied.parameters == {"lexical_weight": 2.0}
    assert "0.4000 → 0.5000 over 4 held out" in applied.reason
    overfit = decide((0.5, 0.5, 4))  # chosen on the first half, no better on the second: kept the policy
    assert isinstance(overfit, PolicyProposalRejected) and "kept the policy" in overfit.reason
    assert isinstance(decide((0.4, 0.5, 2)), PolicyProposalRejected)  # too few held out to tell
    assert verdict(0.5, [], current, 4, "forced", AT, DEFAULT_MOLT) is None
