"""Dense similarities made comparable across languages: each script's turns on one scale.

A multilingual encoder places a question nearer the turns of its own
language than equally relevant turns of another (multilingual-e5-small: an
English question's cosines to the Chinese turns of a conversation sit below
its cosines to the English ones, whatever they say). Ranked as they are, the
turns of the other language fall behind every turn of the question's. Within
one language the cosines order the turns well.

:func:`calibrate` moves each script group (mainly Chinese or not,
:func:`~projections.rules.text.mainly_chinese`) of a user's turns :data:`SHARE` of the way onto the largest
group's scale, where a turn's cosine would be the largest group's mean plus
its z-score within its own group times the largest group's standard
deviation. The largest group's cosines are unchanged; a user whose turns are
(nearly) all in one script is searched exactly as before (a group of fewer
than :data:`MIN_GROUP` turns is left as it is: too few to estimate its
scale).
"""

from __future__ import annotations

import numpy as np

MIN_GROUP = 5  # turns a script group needs for its scale to be estimated (and calibrated)
# How far a group's cosines move toward the largest group's scale: halfway. On the bilingual dev file
# (benchmarks.bilingual, e5) the whole way lifted the other language's best turns above strong matches in the
# question's own language (en→en recall@10 −1.7); halfway left the one-language questions' recall as it was.
SHARE = 0.5


def calibrate(sims: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``sims`` with every script group of at least :data:`MIN_GROUP` turns moved :data:`SHARE` of the way onto
    the largest group's scale (``sims`` itself when there is nothing to move)."""
    labels, counts = np.unique(groups, return_counts=True)
    if len(labels) < 2 or np.sort(counts)[-2] < MIN_GROUP:
        return sims
    major = groups == labels[int(np.argmax(counts))]
    mu, sigma = float(sims[major].mean()), float(sims[major].std())
    out = sims.copy()
    for label, count in zip(labels.tolist(), counts.tolist()):
        members = groups == label
        if count < MIN_GROUP or members is major or np.array_equal(members, major):
            continue
        own = sims[members]
        spread = float(own.std())
        if spread > 0.0:
            on_scale = mu + (own - float(own.mean())) / spread * sigma
            out[members] = own + SHARE * (on_scale - own)
    return out
