"""``import lancedb`` without the two seconds of its REST namespace client.

``lancedb`` imports ``lance_namespace``, which imports model classes from
``lance_namespace_urllib3_client``. That package's ``__init__`` also imports
its REST API classes, whose ~370 ``pydantic.validate_call`` methods build
their validators at import: about 2 s of CPU in every process that opens a
LanceDB directory (each shard actor start, each CLI command), measured 3.1 s →
1.1 s for ``import lancedb`` here. Palimpsest only opens local directories and
never talks to a REST namespace.

:func:`import_lancedb` registers the package as a module whose
``__init__`` has not run yet: its submodules (the models lancedb needs)
import as usual through its ``__path__``, and the first access to any other
attribute of the package runs the real ``__init__`` then, so code that does
use the REST client still finds it whole. If the package is already imported
(or not installed), nothing is changed.

On Python 3.11 lancedb also decorates ~100 methods with the ``overrides``
package's ``@override``, which reads each method's bytecode at import to
check it (about 0.15 s of CPU per process here); from Python 3.12 on lancedb uses
``typing.override``, a marker, and a plain base class instead. While
:func:`import_lancedb` imports it, ``overrides`` is that marker and that
class (:func:`_as_on_312`); the real package is back once lancedb is in.

``lance_namespace`` also imports the client's ~200 pydantic request and
response models, each building its validator as it is defined: about 0.17 s
of CPU per process here (``import_lancedb`` 0.71 → 0.54 s, medians of
seven). While :func:`import_lancedb` imports lancedb, pydantic models are
defined with ``defer_build`` (:func:`_models_built_on_first_use`): a model
builds its validator when it is first used, which for a local directory is
never. Models defined afterwards are built as usual.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
import types

CLIENT = "lance_namespace_urllib3_client"


class _Deferred(types.ModuleType):
    """A package whose ``__init__`` runs on first access to a name it does not hold yet."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        with _lock:
            spec = self.__dict__.pop("_deferred_spec", None)
            if spec is not None:
                spec.loader.exec_module(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


_lock = threading.RLock()


def defer_client_init() -> None:
    """Register :data:`CLIENT` with its ``__init__`` deferred (a no-op if it is imported or missing)."""
    with _lock:
        if CLIENT in sys.modules:
            return
        spec = importlib.util.find_spec(CLIENT)
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        module = _Deferred(CLIENT)
        module.__spec__, module.__file__, module.__loader__ = spec, spec.origin, spec.loader
        module.__path__ = list(spec.submodule_search_locations)
        module.__package__ = CLIENT
        module._deferred_spec = spec
        sys.modules[CLIENT] = module


def _marker(method):
    """What ``typing.override`` does (Python 3.12): mark the method, check nothing."""
    method.__override__ = True
    return method


@contextlib.contextmanager
def _as_on_312():
    """``overrides`` as lancedb has it from Python 3.12 on (``typing.override``, a plain ``EnforceOverrides``),
    while the block runs; the module that was there (or none) afterwards."""
    plain = types.ModuleType("overrides")
    plain.override = plain.overrides = _marker
    plain.EnforceOverrides = type("EnforceOverrides", (), {"__module__": "overrides"})
    before = sys.modules.get("overrides")
    sys.modules["overrides"] = plain
    try:
        yield
    finally:
        if before is not None:
            sys.modules["overrides"] = before
        elif sys.modules.get("overrides") is plain:
            del sys.modules["overrides"]


@contextlib.contextmanager
def _models_built_on_first_use():
    """pydantic models defined while the block runs (subclasses of ``BaseModel`` that do not say otherwise) build
    their validators on first use instead of as they are defined; ``BaseModel``'s config is as it was afterwards."""
    import pydantic

    before = pydantic.BaseModel.model_config
    pydantic.BaseModel.model_config = {**before, "defer_build": True}
    try:
        yield
    finally:
        pydantic.BaseModel.model_config = before


def import_lancedb():
    """The ``lancedb`` module, imported with :func:`defer_client_init` first, its pydantic models built on first
    use (and, on Python 3.11, without the ``overrides`` package's import-time checks)."""
    defer_client_init()
    if "lancedb" in sys.modules:
        import lancedb

        return lancedb
    on_312 = _as_on_312() if sys.version_info < (3, 12) else contextlib.nullcontext()
    with _lock, on_312, _models_built_on_first_use():
        import lancedb

    return lancedb
