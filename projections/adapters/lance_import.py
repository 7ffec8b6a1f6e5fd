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
"""

from __future__ import annotations

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


def import_lancedb():
    """The ``lancedb`` module, imported with :func:`defer_client_init` first."""
    defer_client_init()
    import lancedb

    return lancedb
