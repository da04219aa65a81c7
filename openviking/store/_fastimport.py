"""Make ``import lancedb`` cheap: skip the work its import does for what a local store never uses.

Three costs, each cut only when the installed packages look as expected (else nothing changes):

* ``lance_namespace_urllib3_client``, a generated REST client whose package ``__init__`` imports
  every API and model class up front. A local store never talks REST: lancedb only needs a few
  of those model classes, by name. So its two packages are registered with their ``__init__``
  not yet run, and a name is resolved when it is first asked for: a model class from its own
  submodule, anything else by running the package's real ``__init__`` then.
* ``lance_namespace``, whose ``__init__`` re-exports about 140 of those model classes (each a
  pydantic model built at import) to annotate the methods of one abstract class. It is run with
  that one import statement left out and its annotations kept as strings (PEP 563); a model
  class its code does use is imported before it runs, and any other is resolved when first
  asked for, from ``lance_namespace_urllib3_client.models`` (so ``typing.get_type_hints`` of
  that class's methods finds only the names asked for already).
* On Python 3.11, lancedb decorates about 100 methods with ``overrides.override``, which reads
  the class body's bytecode and compares signatures with the base class's at every decoration.
  lancedb itself uses ``typing.override`` (a marker, no check) from Python 3.12 on; during
  lancedb's import, ``overrides.override`` is that marker too.

Nothing changes for code that uses these packages: every name is there when asked for.
"""

from __future__ import annotations
import __future__

import contextlib
import importlib
import importlib.machinery
import importlib.util
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["import_lancedb"]

CLIENT = "lance_namespace_urllib3_client"
MODELS = CLIENT + ".models"
NAMESPACE = "lance_namespace"
_MODEL_IMPORT = re.compile(rf"^from ({re.escape(MODELS)}\.\w+) import (\w+)\s*$", re.M)
# lance_namespace's one statement that re-exports the model classes: `from ...models import (A, B, ...)`.
_REEXPORT = re.compile(rf"^from {re.escape(MODELS)} import \(([^)]*)\)\n", re.M)


def import_lancedb() -> types.ModuleType:
    """``lancedb``, imported with the three costs above cut (the first time; then as it is)."""
    if "lancedb" not in sys.modules:
        defer_namespace_client()
        light_namespace_package()
        with _overrides_unchecked():
            import lancedb  # noqa: F401 - imported here, with the marker in place
    return sys.modules["lancedb"]


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


def light_namespace_package() -> None:
    """Import ``lance_namespace`` without the model classes it only re-exports (see above); a
    no-op when it is imported already or its ``__init__`` is not laid out as expected."""
    if NAMESPACE in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(NAMESPACE)
        if spec is None or spec.origin is None or spec.submodule_search_locations is None:
            return
        with open(spec.origin, encoding="utf-8") as handle:
            source = handle.read()
        found = _REEXPORT.search(source)
        if found is None:
            return
        reexported = {name.strip() for name in found.group(1).split(",")} - {""}
        # The statement's lines stay, blank, so that a traceback names the right line.
        source = source[: found.start()] + "\n" * found.group(0).count("\n") + source[found.end() :]
        flags = __future__.annotations.compiler_flag
        code = compile(source, spec.origin, "exec", flags=flags, dont_inherit=True)
        models = importlib.import_module(MODELS)
        module = importlib.util.module_from_spec(spec)
        used = _names_in(code) & reexported
        for name in used:
            module.__dict__[name] = getattr(models, name)
    except (ImportError, AttributeError, OSError, SyntaxError, ValueError):
        return
    lazy = reexported - used

    def __getattr__(name: str) -> Any:  # noqa: N807 - PEP 562 hook
        if name in lazy:
            value = getattr(models, name)
            setattr(module, name, value)
            return value
        raise AttributeError(f"module {NAMESPACE!r} has no attribute {name!r}")

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[NAMESPACE] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the package's own code, less one import
    except Exception:  # not as expected after all: the ordinary import runs instead
        sys.modules.pop(NAMESPACE, None)


def _names_in(code: types.CodeType) -> set[str]:
    """Every global or attribute name ``code`` and the functions and classes in it refer to."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names_in(constant)
    return names


@contextlib.contextmanager
def _overrides_unchecked() -> Iterator[None]:
    """While lancedb is imported on Python 3.11, ``overrides.override`` marks a method as
    ``typing.override`` does (what lancedb uses from 3.12 on) instead of checking it."""
    if sys.version_info >= (3, 12):
        yield
        return
    try:
        import overrides
    except ImportError:
        yield
        return
    checked = overrides.override
    overrides.override = _marked
    try:
        yield
    finally:
        overrides.override = checked


def _marked(method: Any = None, **_options: Any) -> Any:
    """``typing.override``'s marker, also taking ``overrides.override``'s keyword form."""
    if method is None:
        return _marked
    with contextlib.suppress(AttributeError, TypeError):
        method.__override__ = True
    return method
