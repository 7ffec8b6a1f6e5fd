"""Where another encoder's cosines sit: the thresholds tuned on MiniLM's scale, moved to the same quantiles.

Encodes the LoCoMo dev turns and the graph labels the offline rules read from
them with MiniLM and with ``--embedder``, and reports, for each MiniLM
threshold, the other encoder's cosine at the same quantile: node merges
(label pairs above 0.85 / 0.95, :class:`projections.decisions.graph_consolidate.ConsolidationConfig`) and
topic shifts between consecutive turns (below 0.4, the episode fold's
``topic_threshold``).

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

LABEL_THRESHOLDS = (0.85, 0.95)  # candidate_above, merge_above
TOPIC_THRESHOLD = 0.4


def turns_of(path: Path, samples: int) -> list[str]:
    turns = []
    for sample in json.loads(path.read_text(encoding="utf-8"))[:samples]:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            turns += [t["text"] for t in conv[key] if t.get("text")]
    return turns


def labels_of(turns: list[str]) -> list[str]:
    messages = validate_messages([{"tenant": "t", "user_id": "u", "text": text,
                                   "occurred_at": "2024-01-01T00:00:00+00:00"} for text in turns])
    return sorted({x for group in candidates_for(messages) for c in group for x in (c.topic, c.object) if x})


def cosines(kind: str, turns: list[str], labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(label-pair cosines, consecutive-turn cosines) under encoder ``kind``."""
    encoder = make_embedder(kind)
    label_vectors, turn_vectors = encoder.encode(labels), encoder.encode(turns)
    upper = np.triu_indices(len(labels), 1)
    return (label_vectors @ label_vectors.T)[upper], np.sum(turn_vectors[1:] * turn_vectors[:-1], axis=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.similarity_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--embedder", required=True, help="the encoder to place on MiniLM's scale")
    parser.add_argument("--samples", type=int, default=3, help="conversations read (default 3)")
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    args = parser.parse_args(argv)
    turns = turns_of(args.data, args.samples)
    labels = labels_of(turns)
    base_pairs, base_turns = cosines("minilm", turns, labels)
    pairs, consecutive = cosines(args.embedder, turns, labels)
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
