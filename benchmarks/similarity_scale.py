"""Where another encoder's cosines sit: the thresholds tuned on MiniLM's scale, moved to the same quantiles.

Encodes the LoCoMo dev turns and the graph labels the offline rules read from
them with MiniLM and with ``--embedder``, and reports, for each MiniLM
threshold, the other encoder's cosine at the same quantile: node merges
(label pairs above 0.85 / 0.95, :class:`projections.decisions.graph_consolidate.ConsolidationConfig`) and
topic shifts (the similarity of the mean vectors of the 3 turns before and the 3 from a position inside a
session below 0.4: the episode fold's ``topic_threshold``).

    python -m benchmarks.similarity_scale --data ../shared/data/locomo/locomo10_dev.json \\
        --embedder multilingual-e5-small --out bench/similarity_scale.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.provenance import stamp
from events.commands import validate_messages
from projections.adapters.encoder_kinds import make_embedder
from projections.decisions.graph_staging import candidates_for
from projections.folds.episodes import DEFAULT_SEGMENTATION, window_similarity

LABEL_THRESHOLDS = (0.85, 0.95)  # candidate_above, merge_above
TOPIC_THRESHOLD = DEFAULT_SEGMENTATION.topic_threshold
WINDOW = DEFAULT_SEGMENTATION.window


def sessions_of(path: Path, samples: int) -> list[list[str]]:
    """The turns of each session of the first ``samples`` conversations."""
    sessions = []
    for sample in json.loads(path.read_text(encoding="utf-8"))[:samples]:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            sessions.append([t["text"] for t in conv[key] if t.get("text")])
    return sessions


def window_similarities(vectors: np.ndarray, sessions: list[list[str]], window: int) -> np.ndarray:
    """At each position inside a session, the cosine of the mean vectors of the ``window`` turns before and the
    ``window`` turns from it (as the episode fold compares them: :func:`projections.folds.episodes.window_similarity`)."""
    out, start = [], 0
    for turns in sessions:
        rows = vectors[start:start + len(turns)]
        start += len(turns)
        for i in range(1, len(turns)):
            similarity = window_similarity(list(rows[max(0, i - window):i]), list(rows[i:i + window]))
            if similarity is not None:
                out.append(similarity)
    return np.array(out)


def labels_of(turns: list[str]) -> list[str]:
    messages = validate_messages([{"tenant": "t", "user_id": "u", "text": text,
                                   "occurred_at": "2024-01-01T00:00:00+00:00"} for text in turns])
    return sorted({x for group in candidates_for(messages) for c in group for x in (c.topic, c.object) if x})


def cosines(kind: str, sessions: list[list[str]], labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(label-pair cosines, window similarities inside sessions) under encoder ``kind``."""
    encoder = make_embedder(kind)
    label_vectors = encoder.encode(labels)
    turn_vectors = encoder.encode([t for turns in sessions for t in turns])
    upper = np.triu_indices(len(labels), 1)
    return (label_vectors @ label_vectors.T)[upper], window_similarities(turn_vectors, sessions, WINDOW)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.similarity_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--embedder", required=True, help="the encoder to place on MiniLM's scale")
    parser.add_argument("--samples", type=int, default=3, help="conversations read (default 3)")
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    args = parser.parse_args(argv)
    sessions = sessions_of(args.data, args.samples)
    turns = [t for s in sessions for t in s]
    labels = labels_of(turns)
    base_pairs, base_turns = cosines("minilm", sessions, labels)
    pairs, consecutive = cosines(args.embedder, sessions, labels)
    result = {"turns": len(turns), "labels": len(labels), "embedder": args.embedder, "label_merge": {},
              "topic_shift": {}}
    for threshold in LABEL_THRESHOLDS:
        share = float((base_pairs > threshold).mean())
        result["label_merge"][str(threshold)] = {"share_above": share,
                                                 "threshold": round(float(np.quantile(pairs, 1 - share)), 4)}
    share = float((base_turns < TOPIC_THRESHOLD).mean())
    result["topic_shift"][str(TOPIC_THRESHOLD)] = {"share_below": share,
                                                   "threshold": round(float(np.quantile(consecutive, share)), 4)}
    result["provenance"] = stamp("benchmarks.similarity_scale", argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("turns", "labels", "label_merge", "topic_shift")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
