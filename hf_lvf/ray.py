"""Ray Data: a root's windows as a ``ray.data.Dataset`` (:func:`read_windows`), per-frame
results as rows to write back (:func:`frame_table`) and the executor that runs
``hf_lvf.convert.convert_videos`` on a Ray cluster (:class:`RayExecutor`).

Importing this module does not import Ray; each of them imports it when called, with an
install hint if it is missing. The code lives in :mod:`hf_lvf.engines.ray_data`.
"""

from __future__ import annotations

from .engines.ray_data import RayExecutor, frame_table, read_windows

__all__ = ["RayExecutor", "frame_table", "read_windows"]
