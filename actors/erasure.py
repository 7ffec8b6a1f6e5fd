"""What a shard does once a ``user_forgotten`` event is committed: remove every derived copy, then the key.

The event is the decision (appended and folded by the runner like any other: the fold empties the user's
projections). Then, in this order:

1. the user's LanceDB rows are deleted and the table rewritten without them, every older version and
   unreferenced file cleaned up (a delete alone only marks rows: their vectors would stay in the fragments);
2. the user's snapshot file is removed (it holds the projections, texts and vectors included);
3. the shard's derived caches of the user (dense matrices, token counts of context lines, the prompts of model
   follow-ups not yet asked) are dropped;
4. the user's data keys up to the event's generation are destroyed (the key store rewritten without them).

The key goes last, so it doubles as the mark of a finished erasure: a shard that died in between finds,
at its next start, a ``user_forgotten`` event whose key is still live (:func:`unfinished`) and runs the
steps again (each is idempotent). After step 4 the user's events in the log are ciphertext nobody can open.
"""

from __future__ import annotations

import structlog

from actors.spec import ShardSpec
from events.crypto import PayloadCipher
from events.erasure_events import PayloadErased
from events.errors import StoreError
from events.keystore import KeyStore
from events.log import EventLog
from projections.rules.extraction import forget_text_caches

logger = structlog.get_logger("palimpsest.shard")
Stream = tuple[str, str]


def unfinished(log: EventLog) -> list[tuple[Stream, int]]:
    """The forgotten users whose keys are still live (the shard died inside an erasure), with the generation."""
    if log.cipher is None:
        return []
    keys = log.cipher.keys
    return [((t, u), gen) for t, u, _, gen in log.forgotten() if keys.unfinished((t, u), gen)]


def erase_user(core, stream: Stream, generation: int) -> dict:
    """Steps 1–4 above for one user of ``core`` (a :class:`actors.core.ShardCore`); what each removed."""
    vectors = core.vectors.erase_stream(*stream)
    snapshot = core.users.forget(stream)
    core.dense.forget(stream)
    core.forget_asks(stream)
    core.forget_caches()
    forget_text_caches()  # the rules' memos of message texts (any user's: they are rebuilt as texts come again)
    keys = core.log.cipher.keys.destroy(stream, generation) if core.log.cipher is not None else 0
    report = {"vectors_removed": vectors, "snapshot_removed": snapshot, "keys_destroyed": keys}
    logger.info("user_erased", shard=core.spec.index, tenant=stream[0], user_id=stream[1], generation=generation,
                **report)
    return report


def cipher_of(spec: ShardSpec) -> PayloadCipher | None:
    """The payload cipher of an encrypted store's shard (its key store under the master key), else None."""
    if spec.key_store is None:
        return None
    if spec.master_key is None:
        raise StoreError(f"shard {spec.index} has a key store but no master key; open the store through "
                         "palimpsest.Memory (it reads PALIMPSEST_MASTER_KEY or the store's master.key)")
    return PayloadCipher(KeyStore(spec.key_store, spec.master_key))


def counting_erased(envelopes, count: list[int]):
    """The envelopes, counting (in ``count[0]``) those of forgotten users, whose payloads no key opens."""
    for env in envelopes:
        if type(env.event) is PayloadErased:
            count[0] += 1
        yield env
