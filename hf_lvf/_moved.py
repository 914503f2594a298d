"""Module paths from before the packages by layer, still importable.

Pickles name a class by its module: a view, a feature or a builder config pickled by
hf_lvf 0.1 before the move names ``hf_lvf.windows``, ``hf_lvf._feature``, ``hf_lvf.sizes``,
and so may a user's import. Each old path imports as a thin module that hands out the
names of the module's new home, so those pickles load and those imports keep working.
It imports nothing of hf_lvf until an old path is asked for. ``hf_lvf.describe`` is not
among them: importing a module of that name would set ``hf_lvf.describe``, the public
function, to the module (nothing pickled names that module: it returns plain dicts).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

# old module path -> its new home
MOVED = {
    "hf_lvf.sizes": "hf_lvf.plan.sizes",
    "hf_lvf.timeline": "hf_lvf.plan.timeline",
    "hf_lvf.clips": "hf_lvf.plan.clips",
    "hf_lvf.samples": "hf_lvf.read.samples",
    "hf_lvf.segments": "hf_lvf.read.segments",
    "hf_lvf.batches": "hf_lvf.read.batches",
    "hf_lvf.orders": "hf_lvf.read.orders",
    "hf_lvf.windows": "hf_lvf.read.windows",
    "hf_lvf.show": "hf_lvf.read.show",
    "hf_lvf._datasets": "hf_lvf.hf.internals",
    "hf_lvf._combining": "hf_lvf.hf.combining",
    "hf_lvf._formatters": "hf_lvf.hf.formatters",
    "hf_lvf._feature": "hf_lvf.hf.feature",
    "hf_lvf._window_lists": "hf_lvf.hf.window_lists",
    "hf_lvf.references": "hf_lvf.hf.references",
    "hf_lvf.root_binding": "hf_lvf.hf.root_binding",
    "hf_lvf.builder": "hf_lvf.hf.builder",
    "hf_lvf.config": "hf_lvf.hf.config",
    "hf_lvf.iterable": "hf_lvf.hf.iterable",
    "hf_lvf.shards": "hf_lvf.hf.shards",
    "hf_lvf.loader": "hf_lvf.training.loader",
    "hf_lvf.sampler": "hf_lvf.training.sampler",
    "hf_lvf.writer": "hf_lvf.write.writer",
    "hf_lvf.append": "hf_lvf.write.append",
    "hf_lvf.store_roots": "hf_lvf.write.store_roots",
    "hf_lvf.merge": "hf_lvf.write.merge",
    "hf_lvf.synthetic": "hf_lvf.write.synthetic",
    "hf_lvf.cli_args": "hf_lvf.cli.args",
    "hf_lvf.demo": "hf_lvf.cli.demo",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED`; asked last, after every real module."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name, f"Moved to {MOVED[spec.name]}.")

    def exec_module(self, module: types.ModuleType) -> None:
        home = importlib.import_module(MOVED[module.__name__])

        def __getattr__(name: str) -> Any:  # noqa: N807  (a module's own __getattr__)
            return getattr(home, name)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = lambda: dir(home)  # type: ignore[method-assign]


def install() -> None:
    """Make the old paths importable (once per process)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
