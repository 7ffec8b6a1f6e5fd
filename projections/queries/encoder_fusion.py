"""The default fusion of each encoder: retrieval's defaults calibrated on the encoder's own similarity scale.

:data:`~projections.queries.retrieval.DEFAULT_FUSION` was tuned with
all-MiniLM-L6-v2. The fusion itself is rank-based (weighted RRF), so its list
weights carry over to another encoder; what reads a raw cosine does not: the
learned rankers (their ``cosine``, ``cosine_gap`` and ``neighbour_cosine``
features), the cosine under which the graph expands in auto mode
(``GraphSearchConfig.low_similarity``), and the lower weight of the dense list
for Chinese queries (MiniLM cannot read Chinese). Each measured encoder has its
overrides of those here, chosen leave-conversations-out on the three dev
files (``benchmarks.lab``, ``benchmarks.train_ranker``):

- MiniLM (and the hash test encoder): none, so its default is ``DEFAULT_FUSION`` itself;
- multilingual-e5-small: rankers fitted on its own features, boosted trees
  (:mod:`~projections.queries.ranker_model_e5`, :mod:`~projections.queries.ranker_model_e5_cjk`), the
  English one re-ordering the best 30 rows (fitted on the best 40), the Chinese one the best 25, the graph
  threshold at the same quantile of the best query–turn cosine as MiniLM's 0.7, one dense weight for every
  language, and turns in another language than the question's judged by what can read them
  (:mod:`~projections.queries.stages.cross_lingual`);
- any other encoder: the rank-based defaults without the rankers, whose cosine features would be read on a
  scale they were not fitted on (fit its own with ``benchmarks.train_ranker`` and add it here).
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from projections.adapters.embedding import E5_ID, HASH_ID, MINILM_ID
from projections.queries.graph_search import DEFAULT_GRAPH_SEARCH
from projections.queries.ranker_model_e5 import MODEL as E5_RANKER
from projections.queries.ranker_model_e5_cjk import MODEL as E5_CJK_RANKER
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig

# MiniLM's 0.7 leaves 82 % of the LoCoMo dev questions' best cosines below it; e5's 0.885 about as many.
E5_LOW_SIMILARITY = 0.885

# model id -> the fields of DEFAULT_FUSION its encoder's default changes (read-only)
OVERRIDES = MappingProxyType({
    MINILM_ID: MappingProxyType({}),
    HASH_ID: MappingProxyType({}),
    E5_ID: MappingProxyType({
        "ranker": E5_RANKER,
        "cjk_ranker": E5_CJK_RANKER,
        "cjk_dense_weight": None,  # e5 reads Chinese: the dense list weighs as much for every language
        "cross_lingual": True,  # and matches an English question to a Chinese turn (stages.cross_lingual)
        "graph_config": replace(DEFAULT_GRAPH_SEARCH, low_similarity=E5_LOW_SIMILARITY),
        # its English trees, fitted on the best 40 rows, re-order the best 30; the Chinese ones the best 25, as fitted
        "ranker_depth": 30,
        "cjk_ranker_depth": 25,
    }),
})
# an encoder not measured: the rankers' cosine features would be on a foreign scale
UNMEASURED = MappingProxyType({"ranker": None, "cjk_ranker": None})

_DEFAULTS = {model: replace(DEFAULT_FUSION, **changes) if changes else DEFAULT_FUSION
             for model, changes in OVERRIDES.items()}
_UNMEASURED_DEFAULT = replace(DEFAULT_FUSION, **UNMEASURED)


def fusion_for(model_id: str) -> FusionConfig:
    """The default fusion of a store whose vectors ``model_id`` made (``DEFAULT_FUSION`` itself for MiniLM)."""
    return _DEFAULTS.get(model_id, _UNMEASURED_DEFAULT)


def measured(model_id: str) -> bool:
    """Whether ``model_id``'s encoder has defaults of its own here (else it gets the unmeasured ones)."""
    return model_id in _DEFAULTS
