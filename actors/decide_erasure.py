"""The forget decider: a ``user_forgotten`` event for a user with something to forget, nothing otherwise."""

from __future__ import annotations

from actors.commands import ForgetUser
from actors.decision import Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.erasure_events import UserForgotten
from events.errors import InvalidInputError, StoreError
from projections.folds.state import ShardState

NOT_ENCRYPTED = ("this store is not encrypted (store.json: \"encryption\": \"none\", a store created before "
                 "encryption): its log holds the user's events in clear, and destroying a key would not erase "
                 "them; copy it into an encrypted store with `palimpsest --store OLD encrypt --out NEW`, then "
                 "forget there")


def decide_forget(state: ShardState, cmd: ForgetUser, deps: Deps) -> Decision:
    """Forget the user's events so far (sealed under its current key generation). Already satisfied (an unknown
    user, or nothing since its last erasure): no event, and the outcome says why."""
    if deps.key_generation is None:
        raise InvalidInputError([("store", NOT_ENCRYPTED)], what="forget")
    stream = (cmd.tenant, cmd.user_id)
    outcome = {"tenant": cmd.tenant, "user_id": cmd.user_id, "forgotten": False}
    if stream not in state.users:
        return Decision([], {**outcome, "reason": "no such user in this store"})
    memory = state.users[stream]
    if memory.head == memory.erasure.last_seq:
        return Decision([], {**outcome, "reason": f"already forgotten at seq {memory.head}; nothing stored since"})
    gen = deps.key_generation(stream)
    if gen is None:
        raise StoreError(f"{stream} has events after seq {memory.erasure.last_seq} but no live data key; the key "
                         "store is not the one this log was written with: restore it from a backup")
    event_id = new_event_id()
    event = UserForgotten(key_generation=gen, through_seq=memory.head, at=cmd.now)
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, event_id, event)],
                    {**outcome, "forgotten": True, "event_id": event_id, "through_seq": memory.head,
                     "key_generation": gen}, react=False)
