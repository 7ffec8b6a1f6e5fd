"""The clear ``touch`` column of the log, and the runs of touch rows a replay folds without decoding them.

Touches are most of a log (a search, a context and a reply each append one)
and each names about twenty memories: opening, decompressing and validating
their sealed payloads one by one was most of a replay. So a log row of a
:class:`~events.model.MemoryTouched` also stores, in the clear column
``touch``, what the folds read of it: the reason, the touched memory ids and
the key generation its payload was sealed under (NULL in a plaintext store).
The sealed payload stays the whole event (query, ranks, scores), as the audit
and export show it.

What this puts in the clear: which memory ids (random ids, like the event ids
and causation ids beside them) one query touched and why. No text, no query.
A forgotten user's rows keep their ids; their key generation says the
payload is erased, and the replay reads them as erased, as before.

:func:`fold_items` decodes a scan batch into what :func:`projections.folds.state.fold`
takes: envelopes, and a :class:`TouchBlock` for each run of consecutive touch
rows of one user whose ``touch`` is set and whose key is live. Older rows
(written before the column) have it NULL and decode as envelopes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress

import numpy as np
import pyarrow as pa

from events.crypto import HEADER
from events.envelope import ENVELOPE_SCHEMA, Envelope, _pylist, from_arrow
from events.erasure_events import PayloadErased
from events.model import MemoryTouched

TOUCH_KIND = MemoryTouched.kind
TOUCH_TYPE = pa.struct([pa.field("reason", pa.string()), pa.field("memory_ids", pa.list_(pa.string())),
                        pa.field("key_gen", pa.int32())])
TOUCH_SQL_TYPE = "STRUCT(reason VARCHAR, memory_ids VARCHAR[], key_gen INTEGER)"


def touch_column(envelopes: list[Envelope], sealed: list | None) -> pa.Array:
    """The ``touch`` value of each envelope's row: set for a touch, NULL otherwise.

    ``sealed`` is the rows' sealed payloads (an Arrow column, in an encrypted log) or None; a touch's key
    generation is read from its header (:mod:`events.crypto`: format byte, then the generation in 4 bytes).
    """
    values = []
    for i, env in enumerate(envelopes):
        event = env.event
        if type(event) is not MemoryTouched:
            values.append(None)
            continue
        blob = sealed[i].as_py() if sealed is not None else None
        gen = int.from_bytes(blob[1:HEADER], "big") if blob is not None else None
        values.append({"reason": event.reason, "memory_ids": list(event.memory_ids), "key_gen": gen})
    return pa.array(values, type=TOUCH_TYPE)


@dataclass(slots=True, eq=False)
class TouchBlock:
    """Consecutive touch events of one user (seqs ``first_seq``..``seq``), as columns.

    ``times``/``reasons`` are per event (``micros``: ``times`` as microseconds since the epoch, to sort
    with numpy); ``ids`` all touched ids in order, event ``i``'s being ``ids[offsets[i]:offsets[i + 1]]``.
    ``seq`` is the last seq (what a fold's head moves to).
    """

    tenant: str
    user_id: str
    first_seq: int
    seq: int
    times: list[datetime]
    reasons: list[str]
    ids: pa.StringArray
    offsets: np.ndarray
    micros: np.ndarray
    event = None  # not an envelope: a fold's per-event checks (``type(env.event)``) see no event class
    _pairs: object = field(default=None, repr=False)

    @property
    def events(self) -> int:
        return len(self.times)

    def row_ids(self, i: int) -> list[str]:
        """The memory ids of event ``i``, in stored order."""
        return self.ids[int(self.offsets[i]):int(self.offsets[i + 1])].to_pylist()


def fold_items(table: pa.Table, cipher=None) -> list:
    """Envelopes and :class:`TouchBlock` s of a scan batch (log order), for a fold.

    A touch row with its ``touch`` column set joins a block, unless its key generation was destroyed (a
    forgotten user): then it is an envelope of :class:`~events.erasure_events.PayloadErased`, as
    :func:`~events.envelope.from_arrow` decodes it from its sealed payload. Every other row decodes as there.
    """
    n = table.num_rows
    if "touch" not in table.column_names:
        return from_arrow(table, cipher)
    touch = table.column("touch").combine_chunks()
    table = table.drop_columns(["touch"])
    state = touch.is_valid().to_numpy(zero_copy_only=False).astype(np.int8)  # 0 envelope, 1 block, 2 erased
    if n == 0 or not state.any():
        return from_arrow(table, cipher)
    tenants, users = table.column("tenant").to_pylist(), table.column("user_id").to_pylist()
    gens = touch.field("key_gen").to_pylist()
    if cipher is not None:  # the distinct (tenant, user, generation) of the touch rows first: rarely is one dead
        keys = set(compress(zip(tenants, users, gens), state.tolist()))
        dead = {key for key in keys if key[2] is None or cipher.keys.key(key[:2], key[2]) is None}
        if dead:
            for i in np.flatnonzero(state).tolist():
                if (tenants[i], users[i], gens[i]) in dead:
                    state[i] = 2
    out: list = []
    start = 0
    for end in [*(np.flatnonzero(np.diff(state)) + 1).tolist(), n]:
        part = table.slice(start, end - start)
        if state[start] == 0:
            out += from_arrow(part, cipher)
        elif state[start] == 1:
            out += _blocks(part, touch.slice(start, end - start), tenants[start:end], users[start:end])
        else:
            out += _erased(part, gens[start:end])
        start = end
    return out


def _erased(table: pa.Table, gens: list) -> list[Envelope]:
    columns = [_pylist(table.column(name)) for name in ENVELOPE_SCHEMA.names[:-1]]
    return [Envelope(*row, PayloadErased(key_generation=gen)) for *row, gen in zip(*columns, gens, strict=True)]


def _blocks(table: pa.Table, touch: pa.StructArray, tenants: list, users: list) -> list[TouchBlock]:
    """Touch rows (their ``touch`` set, their keys live) as one block per run of one user."""
    out = []
    seqs = table.column("seq").to_pylist()
    times = _pylist(table.column("occurred_at"))
    micros = table.column("occurred_at").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    reasons = touch.field("reason").to_pylist()
    lists = touch.field("memory_ids")
    offsets = lists.offsets.to_numpy()
    flat = lists.values
    a, count = 0, len(seqs)
    for b in range(1, count + 1):
        if b == count or tenants[b] != tenants[a] or users[b] != users[a]:
            off = offsets[a:b + 1]
            out.append(TouchBlock(tenants[a], users[a], seqs[a], seqs[b - 1], times[a:b], reasons[a:b],
                                  flat.slice(int(off[0]), int(off[-1] - off[0])), off - off[0], micros[a:b]))
            a = b
    return out
