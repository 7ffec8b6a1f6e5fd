"""The documentation site built once per test session (``make docs`` in strict mode, into a temporary directory):
the strict-build test and the browser tests of the site read the same build."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Build:
    site: Path
    returncode: int
    output: str  # what gen_reference.py and mkdocs printed (stdout and stderr)


@functools.cache
def built_site() -> Build:
    """The generated reference pages, then ``mkdocs build --strict``; the directory is removed at exit."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1"}
    work = Path(tempfile.mkdtemp(prefix="palimpsest-site-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    gen = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_reference.py")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    if gen.returncode != 0:
        return Build(work / "site", gen.returncode, gen.stdout + gen.stderr)
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(work / "site")],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return Build(work / "site", build.returncode, build.stdout + build.stderr)
