"""A byte-level scan of every file under a directory for a user's plaintext and vectors.

Reusable by tests and by ``benchmarks.erasure``: build the needles of what must be gone (:func:`needles`:
each text as UTF-8, each vector's first float32 bytes raw, as LanceDB and pickles hold them, and
base64-encoded, as a plaintext JSON payload holds them), then :func:`scan` reads every regular file (DuckDB
files and WAL, LanceDB fragments, manifests and transaction files, snapshots, key stores, exports, logs)
and counts each needle's occurrences.

The scan finds what is stored literally. A compressed container (a DuckDB column compressed by FSST, a
Snappy page of Parquet) can hide a string; that is why a run shows a positive control, the same scan
finding the needles where they are stored on purpose.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

VECTOR_WINDOW_BYTES = 48  # 12 float32 values: no accidental match, and a multiple of 3 for base64
MIN_DISTINCT_BYTES = 24  # a window of a sparse vector (mostly zeros) would match any run of zeros: left out


@dataclass
class ScanReport:
    files: int = 0
    bytes: int = 0
    hits: list[dict] = field(default_factory=list)  # {"file", "needle", "count"}

    @property
    def total_hits(self) -> int:
        return sum(h["count"] for h in self.hits)

    def by_kind(self) -> dict[str, int]:
        """Hits per needle kind (``text``, ``vector``, ``vector_b64``, ``key``)."""
        out: dict[str, int] = {}
        for h in self.hits:
            kind = h["needle"].split(":", 1)[0]
            out[kind] = out.get(kind, 0) + h["count"]
        return out

    def by_area(self, root: Path) -> dict[str, int]:
        """Hits per top-level entry of the scanned directory (``log``, ``vectors``, ``snapshots``, ...)."""
        out: dict[str, int] = {}
        for h in self.hits:
            area = Path(h["file"]).relative_to(root).parts[0]
            out[area] = out.get(area, 0) + h["count"]
        return out

    def to_dict(self, root: Path | None = None) -> dict:
        out = {"files": self.files, "bytes": self.bytes, "hits": self.total_hits, "hits_by_kind": self.by_kind()}
        if root is not None:
            out["hits_by_area"] = self.by_area(root)
        return out


def needles(texts: Iterable[str], vectors: Iterable[np.ndarray | bytes] = (), keys: Iterable[bytes] = (),
            min_bytes: int = 12) -> dict[str, bytes]:
    """Named byte strings to look for: texts (UTF-8, at least ``min_bytes``), a distinctive window of each
    vector raw and base64 (its most varied 48 bytes at an offset that is a multiple of 12, so the window's
    base64 is a substring of the whole vector's), raw key bytes."""
    out: dict[str, bytes] = {}
    for text in texts:
        raw = text.encode("utf-8")
        if len(raw) >= min_bytes:
            out[f"text:{text[:40]}"] = raw
    for i, vector in enumerate(vectors):
        raw = vector if isinstance(vector, bytes) else np.asarray(vector, dtype="<f4").tobytes()
        windows = [raw[o:o + VECTOR_WINDOW_BYTES] for o in range(0, len(raw) - VECTOR_WINDOW_BYTES + 1, 12)]
        best = max(windows, key=lambda w: len(set(w)), default=b"")
        if len(set(best)) < MIN_DISTINCT_BYTES:
            continue
        out[f"vector:{i}"] = best
        out[f"vector_b64:{i}"] = base64.b64encode(best)
    for i, key in enumerate(keys):
        out[f"key:{i}"] = key
    return out


def scan(root: Path, wanted: dict[str, bytes]) -> ScanReport:
    """Every regular file under ``root`` (symlinks not followed), each needle counted in each file."""
    report = ScanReport()
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            report.files += 1
            report.bytes += len(data)
            for label, needle in wanted.items():
                count = data.count(needle)
                if count:
                    report.hits.append({"file": str(path), "needle": label, "count": count})
    return report
