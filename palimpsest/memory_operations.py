"""The :class:`palimpsest.Memory` methods of the declared operations answered by a shard reader (a mixin),
generated from their declarations (:mod:`palimpsest.operations`): the parameters are validated by the
operation's request model, then one query goes to the user's shard (:mod:`actors.declared`); a reader that
searches (``ShardReader.encodes``) also gets the query's vector and the store's fusion."""

from __future__ import annotations

from actors.declared import DeclaredQuery
from palimpsest.operation import Operation, as_method, signature, validate
from palimpsest.operations import OPERATIONS
from palimpsest.remote import Shards


class DeclaredReadsMixin:
    shards: Shards  # set by Memory.__init__, as are the encoder and the settings a reader that searches needs


def _shard_read(op: Operation):
    def run(self, values: dict):
        tenant, user_id = values.pop("tenant"), values.pop("user_id")
        params = validate(op, values)
        if op.handler.encodes is not None:  # the reader searches: it gets the text's vector, as Memory.search sends
            params.update(query_vector=self._query_vector(params[op.handler.encodes]),
                          query_model=self.embedder.model_id, fusion=self.settings.fusion)
        return self.shards.ask(tenant, user_id, DeclaredQuery(tenant=tenant, user_id=user_id, operation=op.name,
                                                              module=op.handler.module, params=params))

    return as_method(op, signature(op), run)


for _op in OPERATIONS.values():
    if _op.handler is not None:
        setattr(DeclaredReadsMixin, _op.name, _shard_read(_op))
