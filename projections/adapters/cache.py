"""Where the files a process makes once and reuses live: the packaged encoders' exported ONNX graphs, jieba's
prefix dictionary (``PALIMPSEST_CACHE_DIR``, default ``$XDG_CACHE_HOME/palimpsest`` or ``~/.cache/palimpsest``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    explicit = os.environ.get("PALIMPSEST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "palimpsest"
