"""The learning loop's operator side (a mixin of :class:`palimpsest.Memory`): ``explain`` (seed 003 §11
explainability), and the Molt controller (§10) with its policy history and reverts."""

from __future__ import annotations

from datetime import datetime

from actors import commands as c
from palimpsest.remote import Shards, aware
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
