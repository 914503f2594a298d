"""What ``import hf_lvf`` sets up without importing the packages it sets up.

``import hf_lvf`` imports no package of hf_lvf (its public names are imported on first
use), yet two things must hold in any process that imported it, whatever it imports next:

- ``load_dataset("hf_lvf", ...)`` works: the builder (:mod:`hf_lvf.hf.builder`) registers
  itself with ``datasets`` (and the ``WindowVideo`` feature that map-style caches name)
  when it is imported, so it is imported as soon as ``datasets`` is;
- ``VideoWindows.to_iterable_dataset`` works: the reading core cannot import that front
  end (it sits above it, in :mod:`hf_lvf.hf.iterable`), so once the core is imported it
  is given a stand-in that imports the front end on its first call.

Each runs at once if its module is already imported; otherwise a finder first on
``sys.meta_path`` lets the usual finders find that module and runs it right after the
module has run, then leaves. A process that never imports ``datasets`` (``hf-lvf info``, a
conversion worker) never pays for it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import logging
import sys
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# module name -> what to run once it has been imported
_PENDING: dict[str, list[Callable[[], None]]] = {}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the spec the other finders give for a module of
    :data:`_PENDING` so that its callbacks run once the module has been executed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _PENDING:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        exec_module = getattr(spec.loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_run(module: Any) -> None:
            exec_module(module)
            _run(_PENDING.pop(fullname, []))
            if not _PENDING:
                sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]

        spec.loader.exec_module = exec_then_run  # this import's loader only
        return spec


def _run(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception as err:  # never break the caller's import
            logger.warning("hf_lvf could not set up %s: %s", callback.__doc__, err)


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Run ``callback`` once module ``name`` is imported: now if it is."""
    if name in sys.modules:
        _run([callback])
        return
    _PENDING.setdefault(name, []).append(callback)
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def register_builder() -> None:
    """load_dataset("hf_lvf") with datasets"""
    importlib.import_module("hf_lvf.hf.builder")  # registers itself on import


def give_the_core_its_iterable_front_end() -> None:
    """VideoWindows.to_iterable_dataset"""
    from .read import windows

    if windows._iterable_front_end is None:
        windows.install_iterable_front_end(_to_iterable_dataset)


def _to_iterable_dataset(view: Any, **options: Any) -> Any:
    from .hf.iterable import to_iterable_dataset  # installs itself in the core for next time

    return to_iterable_dataset(view, **options)


def set_up() -> None:
    """What ``import hf_lvf`` sets up (idempotent)."""
    after_import("datasets", register_builder)
    after_import("hf_lvf.read.windows", give_the_core_its_iterable_front_end)


__all__ = ["after_import", "set_up"]
