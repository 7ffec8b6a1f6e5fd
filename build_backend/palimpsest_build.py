"""Palimpsest's build backend: setuptools, with the wheel installing one top-level package, ``palimpsest``.

The repository keeps its layers as top-level folders (``events/``, ``projections/``, ``actors/``, ``palimpsest/``,
``benchmarks/``), and its code imports them by those names. Two layouts are built from them:

- the wheel (``pip wheel .``, ``pip install .``, the sdist): the packages of ``palimpsest/`` and, below it, those
  of ``events/``, ``projections/`` and ``actors/`` as ``palimpsest.events``, ``palimpsest.projections`` and
  ``palimpsest.actors``, their imports rewritten to those names (:mod:`palimpsest_rewrite`); ``benchmarks/`` is
  not installed;
- the editable install (``pip install -e .``, for development): every folder under its own name, as the code is
  written.

Every hook is setuptools' own (``setuptools.build_meta``); the editable ones build the editable layout.
``setup.py`` asks :func:`setup_arguments` for the packages of the layout being built.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta, find_namespace_packages
from setuptools.build_meta import *  # noqa: F403 (the PEP 517 hooks, re-exported unchanged)
from setuptools.command.build_py import build_py
from setuptools.errors import SetupError

from palimpsest_rewrite import LAYERS, PREFIX, RewriteError, SourceTree, rewrite

# What each layout installs; package data is given per folder and follows the folder into either layout.
EDITABLE_PACKAGES = ["events*", "projections*", "actors*", "palimpsest*", "benchmarks*"]
PACKAGE_DATA = {"palimpsest": ["data/*.jsonl", "server/ui/*"], "projections": ["queries/*.js", "queries/*.css"]}
_layout = "wheel"


@contextmanager
def _editable() -> Iterator[None]:
    global _layout
    _layout = "editable"
    try:
        yield
    finally:
        _layout = "wheel"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    with _editable():
        return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    with _editable():
        return build_meta.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def get_requires_for_build_editable(config_settings=None):
    with _editable():
        return build_meta.get_requires_for_build_editable(config_settings)


def setup_arguments() -> dict:
    """``setup()``'s packages, package folders, package data and commands for the layout being built."""
    if _layout == "editable":
        return {"packages": find_namespace_packages(include=EDITABLE_PACKAGES), "package_data": PACKAGE_DATA}
    packages = find_namespace_packages(include=[PREFIX, f"{PREFIX}.*"], exclude=["*__pycache__*"])
    for layer in LAYERS:
        packages += [f"{PREFIX}.{p}" for p in find_namespace_packages(include=[layer, f"{layer}.*"],
                                                                       exclude=["*__pycache__*"])]
    return {"packages": packages,
            "package_dir": {f"{PREFIX}.{layer}": layer for layer in LAYERS},
            "package_data": {(name if name == PREFIX else f"{PREFIX}.{name}"): patterns
                             for name, patterns in PACKAGE_DATA.items()},
            "cmdclass": {"build_py": BuildPy}}


class BuildPy(build_py):
    """``build_py`` of the wheel: copies each module into the build tree with its layer imports rewritten.

    The build tree is emptied first, so the wheel holds this layout only (no module of an earlier build or layout).
    Every module's problems are gathered and reported together; the build then stops.
    """

    command_name = "build_py"

    def run(self) -> None:
        shutil.rmtree(self.build_lib, ignore_errors=True)
        self._tree = SourceTree.scan({layer: Path(self.get_package_dir(f"{PREFIX}.{layer}")) for layer in LAYERS})
        self._problems: list[str] = []
        super().run()
        if self._problems:
            raise SetupError(str(RewriteError(self._problems)))

    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        path = Path(outfile)
        try:
            path.write_text(rewrite(path.read_text(encoding="utf-8"), module_file, self._tree), encoding="utf-8")
        except RewriteError as exc:
            self._problems += exc.problems
        return outfile, copied
