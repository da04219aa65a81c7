"""Make ``import lancedb`` cheap: defer its REST namespace client until something uses it.

``import lancedb`` spends most of its time (about 0.7 s of 1.3 s on these machines) in
``lance_namespace_urllib3_client``, a generated REST client whose package ``__init__``
imports every API and model class up front. A local store never talks REST: lancedb only
needs a few of those model classes, by name. So before lancedb is imported, the two
packages are registered with their ``__init__`` not yet run, and a name is resolved when it
is first asked for: a model class from its own submodule, anything else by running the
package's real ``__init__`` then. Nothing changes for code that does use them; if the
layout of the package is not what is expected, nothing is changed at all.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
import types
from typing import Any

__all__ = ["defer_namespace_client"]

CLIENT = "lance_namespace_urllib3_client"
MODELS = CLIENT + ".models"
_MODEL_IMPORT = re.compile(rf"^from ({re.escape(MODELS)}\.\w+) import (\w+)\s*$", re.M)


def defer_namespace_client() -> None:
    """Register the deferred packages (once; a no-op when they are already imported)."""
    if CLIENT in sys.modules:
        return
    try:
        client_spec = importlib.util.find_spec(CLIENT)
        if client_spec is None or client_spec.submodule_search_locations is None:
            return
        # find_spec(MODELS) would import the parent package (the slow part): look in its folder.
        models_spec = importlib.machinery.PathFinder.find_spec(MODELS, client_spec.submodule_search_locations)
        if models_spec is None or models_spec.origin is None:
            return
        with open(models_spec.origin, encoding="utf-8") as handle:
            model_modules = {name: module for module, name in _MODEL_IMPORT.findall(handle.read())}
        if not model_modules:
            return
        client = _deferred_package(client_spec, {})
        models = _deferred_package(models_spec, model_modules)
    except (ImportError, OSError, ValueError):
        return
    sys.modules[CLIENT] = client
    sys.modules[MODELS] = models
    client.models = models  # type: ignore[attr-defined]


def _deferred_package(spec: Any, lazy_names: dict[str, str]) -> types.ModuleType:
    """A package module whose ``__init__`` runs only when a name it does not map is asked for."""
    module = importlib.util.module_from_spec(spec)
    state = {"initialised": False}

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562 hook
        if name.startswith("__"):
            raise AttributeError(name)
        target = lazy_names.get(name)
        if target is not None:
            value = getattr(importlib.import_module(target), name)
            setattr(module, name, value)
            return value
        if not state["initialised"]:
            state["initialised"] = True
            spec.loader.exec_module(module)  # the real __init__, run in place
            if name in module.__dict__:
                return module.__dict__[name]
        raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")

    setattr(module, "__getattr__", __getattr__)  # noqa: B010 - a module attribute, not a method
    return module
