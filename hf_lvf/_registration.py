"""What ``import hf_lvf`` sets up without importing the packages it sets up.

``import hf_lvf`` imports no package of hf_lvf (its public names are imported on first
use), yet two things must hold in any process that imported it, whatever it imports next:

- ``load_dataset("hf_lvf", ...)`` works: the builder (:mod:`hf_lvf.hf.builder`) registers
  itself with ``datasets`` (and the ``WindowVideo`` feature that map-style caches name)
  when it is imported, so it is imported as soon as ``datasets`` is;
- ``VideoWindows.to_iterable_dataset`` works: the reading core cannot import that front
  end (it sits above it, in :mod:`hf_lvf.hf.iterable`), so once the core is imported it
  is given a stand-in that imports the front end on its first call.

Each runs once its module is imported and no module of hf_lvf is half-imported: at once if
both already hold; otherwise a finder first on ``sys.meta_path`` lets the usual finders
find the modules and runs the callbacks right after the last import under way has run,
then leaves. A callback imports hf_lvf modules (the builder imports the ``hf`` package), so
running it while one of them is half-run would find that module without the names it has
yet to define: ``datasets`` is often imported by an hf_lvf module (``hf.internals``, which
``safe_dataloader`` imports), and the callback waits for that module to finish. A process
that never imports ``datasets`` (``hf-lvf info``, a conversion worker) never pays for it.
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
# hf_lvf modules being run by an import right now (the package itself excepted)
_UNDER_WAY = [0]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the spec the other finders give for a module of
    :data:`_PENDING`, and for every module of hf_lvf, so that each pending callback whose
    module is imported runs once no module of hf_lvf is being run."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _PENDING and not fullname.startswith(f"{__package__}."):
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
        ours = fullname.startswith(f"{__package__}.")

        def exec_then_run(module: Any) -> None:
            _UNDER_WAY[0] += ours
            try:
                exec_module(module)
            finally:
                _UNDER_WAY[0] -= ours
            _run_ready()

        spec.loader.exec_module = exec_then_run  # this import's loader only
        return spec


def _run_ready() -> None:
    """Run the callbacks of every imported module of :data:`_PENDING`, unless an import of
    an hf_lvf module is under way; leave ``sys.meta_path`` once none is pending."""
    if _UNDER_WAY[0]:
        return
    for name in [name for name in _PENDING if name in sys.modules]:
        _run(_PENDING.pop(name, []))  # [] where a callback's own imports ran it already
    if not _PENDING:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]


def _run(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception as err:  # never break the caller's import
            logger.warning("hf_lvf could not set up %s: %s", callback.__doc__, err)


def after_import(name: str, callback: Callable[[], None]) -> None:
    """Run ``callback`` once module ``name`` is imported and no import of an hf_lvf module
    is under way: now if that holds."""
    if name in sys.modules and not _UNDER_WAY[0]:
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

    if not windows.has_iterable_front_end():
        windows.install_iterable_front_end(_to_iterable_dataset)


def _to_iterable_dataset(view: Any, **options: Any) -> Any:
    from .hf.iterable import to_iterable_dataset  # imported once, on the first call

    return to_iterable_dataset(view, **options)


def set_up() -> None:
    """What ``import hf_lvf`` sets up (idempotent)."""
    after_import("datasets", register_builder)
    after_import("hf_lvf.read.windows", give_the_core_its_iterable_front_end)


__all__ = ["after_import", "set_up"]
