"""Writing and growing roots: :func:`write_frames` (:mod:`.writer`; what a video given to it
is, per-frame fields and spans included: :mod:`.videos`; videos -> record batches:
:mod:`.batches`), appending in place (:mod:`.append`; :mod:`.store_roots` on object stores,
without a rename), a folder of roots (one per split or camera) written whole
(:mod:`.folders`), merging (:func:`merge_roots`), adding per-frame columns to a root
(:func:`add_frame_columns`), proxies: a smaller copy of every frame (:func:`add_proxy`,
:mod:`.proxies`; image streams: :mod:`.streams`), pointing a saved dataset at a root that moved
(:func:`relocate_roots`) and synthetic clips for demos and tests (:mod:`.synthetic`).

Every write is atomic: a reader never sees a half-written root. Sits beside the reading
side, above the front ends; it may import every layer below it. Converting video files
(:mod:`hf_lvf.convert`) builds on it.

The public names are imported on first use, so a module of the package (a conversion
worker's) imports neither ``datasets`` nor what it does not use.
"""

# ruff: noqa: F401  (the imports are re-exported by __all__ = list(_HOMES), which ruff cannot read)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and the API reference; the same as _HOMES (a test checks)
    from ..hf.references import relocate_roots
    from .columns import add_frame_columns
    from .merge import merge_roots
    from .proxies import add_proxy
    from .writer import write_frames

# Each public name -> the module it is imported from on first use; __all__ is its keys.
_HOMES = {
    "write_frames": "hf_lvf.write.writer",
    "add_frame_columns": "hf_lvf.write.columns",
    "merge_roots": "hf_lvf.write.merge",
    "add_proxy": "hf_lvf.write.proxies",
    "relocate_roots": "hf_lvf.hf.references",
}
__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hf_lvf.write' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
