"""The learning loop's operator side (a mixin of :class:`palimpsest.Memory`): ``explain``
(why a memory is what it is), and the Molt controller with its policy history and reverts."""

from __future__ import annotations

from datetime import datetime

from actors import commands as c
from events.errors import InvalidInputError
from palimpsest.remote import Shards, aware
from projections.adapters.embedding import encode_queries
from projections.queries.retrieval import FusionConfig


class LearningApiMixin:
    shards: Shards  # set by Memory.__init__

    def explain(self, tenant: str, user_id: str, memory_id: str, *, at: datetime | None = None,
                query: str | None = None, fusion: FusionConfig | None = None) -> dict:
        """Why a memory, note or graph memory is what it is at ``at`` (default: now).

        Returns its source events (message, classification, embedding, note
        operations, graph staging, the model calls they cite), the notes and
        graph memories derived from it with their versions, every touch and
        feedback signal with its reason, the retention at ``at`` with the curve
        ahead and the expected archival date, archival and restores, the
        dispatcher's adjustments (and whether each applies at ``at``), a
        ``status`` list saying in words why it is where it is, and, given a
        ``query``, its score breakdown for that query.
        """
        at = aware(at, "explain")
        vector = self._query_vector(query) if query is not None else None
        return self.shards.ask(tenant, user_id, c.Explain(
            tenant=tenant, user_id=user_id, memory_id=memory_id, at=at, query=query, query_vector=vector,
            fusion=fusion or self.settings.fusion))

    def policy_history(self, tenant: str, user_id: str) -> dict:
        """The Molt controller's record for one user: the parameters in force and every change or rejection."""
        return self.shards.ask(tenant, user_id, c.PolicyHistory(tenant=tenant, user_id=user_id))

    def _streams(self, tenant: str | None, user_id: str | None) -> list[tuple[str, str]]:
        if user_id is not None:
            if tenant is None:
                raise InvalidInputError([("tenant", "a user id needs its tenant; pass tenant= as well")], what="molt")
            return [(tenant, user_id)]
        parts = self.shards.ask_each(c.Streams())
        return sorted(tuple(x) for streams in parts for x in streams if tenant is None or x[0] == tenant)

    def molt(self, tenant: str | None = None, user_id: str | None = None, *, dry_run: bool = False,
             force: bool = False, now: datetime | None = None, asked_at: datetime | None = None,
             fusion: FusionConfig | None = None, progress: bool = False) -> list[dict]:
        """Run the Molt controller on one user, a tenant's users or every user.

        Per user: the effectiveness figures from the log (usage, restores,
        conflicts, negative feedback, episode density); when a recall-side
        figure crossed its threshold (or ``force``), fusion proposals replayed
        over the user's recorded queries (each query a reply answered, with the
        memories it used; ``asked_at`` replays them all as asked then instead
        of at their recorded time), and the verdict: a ``policy_changed`` event
        if the best proposal improves the replayed metric, else a recorded
        rejection with the figures. ``dry_run`` writes nothing.
        """
        now = aware(now, "molt")
        if asked_at is not None:
            asked_at = aware(asked_at, "molt")
        out = []
        streams = self._streams(tenant, user_id)
        if progress:
            from tqdm import tqdm

            streams = tqdm(streams, desc="molt", unit="user")
        for t, u in streams:
            recorded = self.shards.ask(t, u, c.MoltInputs(tenant=t, user_id=u))
            vectors = encode_queries(self.embedder, [r["query"] for r in recorded]) if recorded else []
            queries = tuple((r["query"], v, asked_at or datetime.fromisoformat(r["at"]), tuple(r["memory_ids"]))
                            for r, v in zip(recorded, vectors))
            out.append(self.shards.send(t, u, c.Molt(tenant=t, user_id=u, queries=queries, now=now, dry_run=dry_run,
                                                     force=force, fusion=fusion or self.settings.fusion)))
        return out

    def revert_policy(self, tenant: str, user_id: str, change_id: str, *, reason: str = "reverted by hand",
                      now: datetime | None = None) -> dict:
        """Undo a Molt policy change (a ``policy_changed`` restoring the values it replaced)."""
        return self.shards.send(tenant, user_id, c.RevertPolicy(tenant=tenant, user_id=user_id, change_id=change_id,
                                                                reason=reason, now=aware(now, "molt")))
