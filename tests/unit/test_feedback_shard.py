"""JudgeFeedback on a shard: one feedback_detected event naming the judged context, folded, replayed, no memory changed."""

from __future__ import annotations

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from projections.adapters.embedding import HashEmbedder
from projections.folds.state import CONFIGURED_PROJECTIONS, PROJECTIONS
from tests.builders import command
from tests.shard_helpers import context, kinds, record

USER = {"tenant": "acme", "user_id": "mel"}
PROJECTION_NAMES = [*PROJECTIONS, *CONFIGURED_PROJECTIONS]


@pytest.fixture
def core(tmp_path):
    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "s.duckdb", lance_dir=tmp_path / "v",
                               model_id=HashEmbedder.model_id, dim=384))
    record(core, [command("I love cilantro on everything", 0, user_id="mel"),
                  command("My sister works as a nurse in Boston", 1, user_id="mel")])
    yield core
    core.close()


def test_a_correction_is_recorded_as_a_signal_naming_the_context_and_changes_no_memory(core):
    ctx = context(core, "cilantro", 200, user_id="mel")
    used = tuple(i.memory_id for i in ctx.items)
    core.flush_touches()  # the context's own touches, written before the command would write them

    def projections() -> dict:
        memory = core.state.user("acme", "mel")
        return {name: repr(getattr(memory, name).canonical()) for name in PROJECTION_NAMES
                if name not in ("feedback", "adjustments")}

    before = projections()

    [verdict] = core.handle([c.JudgeFeedback(**USER, user_input="No, I told you I don't eat cilantro any more",
                                             agent_response="Here is a recipe with lots of cilantro!",
                                             context_window=("what should I cook?",), memory_ids=used)])

    assert verdict["type"] == "negative" and "invalidate" in verdict["action_hints"]
    assert verdict["memory_ids"] == list(used) and used
    # the signal, then the dispatcher's working-layer reaction to it (tests/unit/test_dispatcher.py)
    assert kinds(core)[-2:] == ["feedback_detected", "memory_adjusted"]
    [signal] = core.query(c.Feedback(**USER))
    assert signal["event_id"] == verdict["event_id"] and signal["memory_ids"] == list(used)
    assert core.query(c.Feedback(**USER, memory_id=used[0])) == [signal]
    assert core.query(c.Feedback(**USER, memory_id="nothing")) == []
    assert projections() == before  # a signal and an adjustment: no memory, note or touch changed
    assert core.admin(c.Replay()).equal


def test_neutral_turns_are_recorded_too_and_unknown_ids_are_refused_with_nothing_written(core):
    [verdict] = core.handle([c.JudgeFeedback(**USER, user_input="明天我们去爬山吧", agent_response="好的！")])
    assert verdict["type"] == "neutral" and verdict["feedback_detected"] is False
    before = core.log.count()
    with pytest.raises(InvalidInputError, match="memory_ids"):
        core.handle([c.JudgeFeedback(**USER, user_input="wrong", agent_response="x", memory_ids=("nope",))])
    assert core.log.count() == before
    assert [s["type"] for s in core.query(c.Feedback(**USER))] == ["neutral"]
