"""The packages of the layout being built; see build_backend/palimpsest_build.py (the build backend)."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "build_backend"))  # already there under pip; kept for tools
from palimpsest_build import setup_arguments  # noqa: E402

setup(**setup_arguments())
