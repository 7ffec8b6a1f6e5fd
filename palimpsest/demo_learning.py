"""The demo's learning-loop scene, in English and in Chinese.

The user corrects the agent twice about a stale preference: the Feedback
Judge reads each correction, the Evolution Dispatcher penalises the note at
once (working layer) and invalidates it after the second consistent signal
(stable layer), the next context no longer carries it, ``explain`` says why,
and a revert brings it back. Two tiny users, so the scene adds little time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

TENANT = "demo"
SCENES = (
    {
        "user": "lena", "language": "English",
        "messages": ["I love cilantro on everything", "My sister Ana lives in Lisbon",
                     "We are planning a trip to Japan in the autumn"],
        "query": "what should I cook tonight? something with herbs I like",
        "reply": "Since you love cilantro on everything, try a salsa verde with lots of cilantro.",
        "corrections": ["No, I told you I don't eat cilantro any more.",
                        "That's wrong again. I said that before: I don't eat cilantro any more!"],
    },
    {
        "user": "lin", "language": "中文",
        "messages": ["我喜欢在咖啡里加很多糖", "我妹妹住在杭州", "我们打算秋天去日本旅行"],
        "query": "给我推荐一杯咖啡，我喜欢怎么喝咖啡？",
        "reply": "你喜欢在咖啡里加很多糖，推荐你来一杯加糖的焦糖拿铁。",
        "corrections": ["不对，我早就不加糖了。", "又错了！我说过我现在不在咖啡里加糖了。"],
    },
)


def carried(ctx) -> set[str]:
    """The memories and notes a context holds: its items and the turns its notes stand for."""
    return {m for i in ctx.items for m in (i.memory_id, *i.provenance.get("event_ids", ()))}


def run_scene(mem, scene: dict, start: datetime) -> bool:
    """One user's scene; True when every step showed what it should."""
    user = scene["user"]
    mem.add_messages([{"text": t, "occurred_at": (start + timedelta(minutes=i)).isoformat(), "speaker": user,
                       "conversation_id": f"{user}-1", "client_message_id": f"{user}-1:{i}"}
                      for i, t in enumerate(scene["messages"])], tenant=TENANT, user_id=user)
    stale_turn = None
    ok = True
    for round_, correction in enumerate(scene["corrections"], start=1):
        at = start + timedelta(days=round_)
        ctx = mem.build_context(TENANT, user, scene["query"], token_budget=200, now=at)
        print(f"[{scene['language']}] session {round_}: context holds {len(ctx.items)} lines, the first: "
              f"{ctx.items[0].line if ctx.items else '-'}")
        print(f"   agent: {scene['reply']}\n   {user}: {correction}")
        verdict = mem.judge_feedback(TENANT, user, correction, scene["reply"], retrieved=ctx, now=at + timedelta(minutes=1))
        print(f"   judge: {verdict['type']} {verdict['confidence']:.2f} hints {','.join(verdict['action_hints'])} "
              f"cues {'; '.join(verdict['cues'])}")
        for a in verdict["adjustments"]:
            print(f"   dispatcher: {a['layer']} {a['action']} on {len(a['target_ids'])} item(s) — {a['reason']}")
        stable = [a for a in verdict["adjustments"] if a["layer"] == "stable" and a["action"] == "invalidate"]
        if round_ == 1:
            ok &= bool(verdict["adjustments"]) and not stable
        else:
            ok &= bool(stable)
            if stable:
                stale_turn = stable[0]
    if stale_turn is None:
        print("   (the dispatcher did not invalidate anything)")
        return False
    after = start + timedelta(days=len(scene["corrections"]) + 1)
    ctx = mem.build_context(TENANT, user, scene["query"], token_budget=200, now=after)
    gone = not set(stale_turn["target_ids"]) & carried(ctx)
    print(f"   next session: the stale note is {'gone from' if gone else 'STILL IN'} the context; it now starts "
          f"with: {ctx.items[0].line if ctx.items else '-'}")
    note_ids = {n["note_id"] for n in mem.notes(TENANT, user, include_inactive=True)}
    note = next((t for t in stale_turn["target_ids"] if t in note_ids), stale_turn["target_ids"][0])
    why = mem.explain(TENANT, user, note, at=after)
    print(f"   explain {note[:12]} ({why['subject']['text']!r}):")
    for line in why["status"][:2]:
        print(f"     - {line}")
    print(f"     feedback: {len(why['feedback'])} signals, adjustments: {len(why['adjustments'])}")
    mem.revert_adjustment(TENANT, user, stale_turn["adjustment_id"], reason="the user likes it again",
                          now=after + timedelta(hours=1))
    back = set(stale_turn["target_ids"]) & carried(
        mem.build_context(TENANT, user, scene["query"], token_budget=200, now=after + timedelta(hours=2)))
    print(f"   revert {stale_turn['adjustment_id'][:12]}: the note is {'back in' if back else 'NOT back in'} "
          "the context")
    return ok and gone and bool(back)


def run_learning(mem) -> bool:
    start = datetime(2024, 6, 3, 19, 0, tzinfo=UTC)
    return all([run_scene(mem, scene, start) for scene in SCENES])
