"""hf_lvf: lance-video-frames roots as fixed-length frame windows for Hugging Face and PyTorch.

``import hf_lvf`` imports only the exceptions; each public name below is imported from its
package on first use, so a command (``hf-lvf info``) or a conversion worker that needs no
``datasets`` never imports it. ``load_dataset("hf_lvf", ...)`` works all the same: the
builder registers with ``datasets`` as soon as both are imported (:mod:`._registration`).

The top level holds what a reader of windows uses. The rest has its own public home:
:mod:`hf_lvf.errors` (every exception and warning), :mod:`hf_lvf.write` (writing, merging,
growing and relocating roots), :mod:`hf_lvf.convert` (video files and other datasets ->
roots) and :mod:`hf_lvf.ray` (Ray Data).
"""

# ruff: noqa: F401  (the imports are re-exported by __all__ = list(_HOMES), which ruff cannot read)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._registration import set_up as _set_up
from ._version import __version__
from .errors import FrameDecodeError, LVFError, ParameterError, RootNotFoundError

if TYPE_CHECKING:  # for type checkers and the API reference; the same as _HOMES (a test checks)
    from .card import build_card
    from .card.describe import describe
    from .card.preview import save_window
    from .decode import DEFAULT_QUALITY
    from .frames import FrameField, ReadAheadBudget
    from .hf.builder import HfLvfConfig
    from .hf.feature import WindowVideo
    from .layout import MISSING_VALUES, VideoInfo, read_layout
    from .plan import DEFAULT_MAX_FRAME_PIXELS, WindowParams
    from .publish import push_card, push_to_hub
    from .read.windows import VideoWindows
    from .training.lerobot_windows import LeRobotWindows
    from .training.loader import safe_dataloader
    from .training.sampler import ClipSampler

# The one list of the public names: each name -> the module (hf_lvf.<module>) it is imported
# from on first use (None: imported above). __all__ is its keys.
_HOMES: dict[str, str | None] = {
    "__version__": None,
    # reading windows
    "VideoWindows": "read.windows",
    "WindowParams": "plan",
    "FrameField": "frames",
    "ReadAheadBudget": "frames",
    "describe": "card.describe",
    "save_window": "card.preview",
    "read_layout": "layout",
    "VideoInfo": "layout",
    "MISSING_VALUES": "layout",
    "DEFAULT_MAX_FRAME_PIXELS": "plan",
    "DEFAULT_QUALITY": "decode",
    # with datasets, with PyTorch
    "HfLvfConfig": "hf.builder",
    "WindowVideo": "hf.feature",
    "safe_dataloader": "training.loader",
    "ClipSampler": "training.sampler",
    "LeRobotWindows": "training.lerobot_windows",
    # the Hub
    "push_to_hub": "publish",
    "push_card": "publish",
    "build_card": "card",
    # the errors a reader catches most (all of them: hf_lvf.errors)
    "LVFError": None,
    "RootNotFoundError": None,
    "ParameterError": None,
    "FrameDecodeError": None,
}
__all__ = list(_HOMES)

# The public modules beside the top level, imported on first use as ``hf_lvf.<module>``.
_MODULES = ("errors", "write", "convert", "ray")

# Names the top level exported before they got their own home (never released: no alias, an
# AttributeError that says where each went). The errors are every name of hf_lvf.errors.
_MOVED = {
    "write_frames": "write",
    "add_frame_columns": "write",
    "merge_roots": "write",
    "relocate_roots": "write",
    "convert_videos": "convert",
    "ConversionSummary": "convert",
    "read_windows": "ray",
    "frame_table": "ray",
    "RayExecutor": "ray",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    elif name in _MODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        from . import errors

        moved = _MOVED.get(name) or ("errors" if name in errors.__all__ else None)
        if moved is None:
            raise AttributeError(f"module 'hf_lvf' has no attribute {name!r}")
        raise AttributeError(f"hf_lvf.{name} moved: use hf_lvf.{moved}.{name}")
    globals()[name] = value  # once imported, an attribute like any other
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_MODULES})


_set_up()  # load_dataset("hf_lvf", ...), to_iterable_dataset (see _registration)
