"""hf_lvf: lance-video-frames roots as fixed-length frame windows for Hugging Face and PyTorch.

``import hf_lvf`` imports only the exceptions; each public name below is imported from its
package on first use, so a command (``hf-lvf info``) or a conversion worker that needs no
``datasets`` never imports it. ``load_dataset("hf_lvf", ...)`` works all the same: the
builder registers with ``datasets`` as soon as both are imported (:mod:`._registration`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._registration import set_up as _set_up
from ._version import __version__
from .errors import (
    DroppedVideosWarning,
    ForkSafetyError,
    FrameDecodeError,
    HubError,
    InputNotFoundError,
    LayoutError,
    LVFError,
    MissingDependencyError,
    ParameterError,
    ParameterTypeError,
    RootBusyError,
    RootExistsError,
    RootNotFoundError,
    SkippedVideoWarning,
    StoreError,
    UsageError,
    VideoDecodeError,
    WindowIndexError,
    WorkerLoadError,
)

if TYPE_CHECKING:
    from .card import build_card
    from .card.describe import describe
    from .card.preview import save_window
    from .convert import ConversionSummary, convert_videos
    from .decode import DEFAULT_QUALITY
    from .engines.ray_data import RayExecutor, frame_table, read_windows
    from .frames import FetchAhead, FrameField
    from .hf.builder import HfLvfConfig
    from .hf.feature import WindowVideo
    from .hf.references import relocate_roots
    from .layout import MISSING_VALUES, VideoInfo, read_layout
    from .plan import DEFAULT_MAX_FRAME_PIXELS, WindowParams
    from .publish import push_card, push_to_hub
    from .read.windows import VideoWindows
    from .training.loader import safe_dataloader
    from .training.sampler import ClipSampler
    from .write.columns import add_frame_columns
    from .write.merge import merge_roots
    from .write.writer import write_frames

# Where each public name lives (hf_lvf.<package>), imported on first use.
_HOMES = {
    "build_card": "card",
    "ConversionSummary": "convert",
    "convert_videos": "convert",
    "DEFAULT_QUALITY": "decode",
    "RayExecutor": "engines.ray_data",
    "frame_table": "engines.ray_data",
    "read_windows": "engines.ray_data",
    "FetchAhead": "frames",
    "HfLvfConfig": "hf.builder",
    "WindowVideo": "hf.feature",
    "relocate_roots": "hf.references",
    "MISSING_VALUES": "layout",
    "VideoInfo": "layout",
    "read_layout": "layout",
    "FrameField": "frames",
    "WindowParams": "plan",
    "DEFAULT_MAX_FRAME_PIXELS": "plan",
    "push_card": "publish",
    "push_to_hub": "publish",
    "describe": "card.describe",
    "save_window": "card.preview",
    "VideoWindows": "read.windows",
    "safe_dataloader": "training.loader",
    "ClipSampler": "training.sampler",
    "add_frame_columns": "write.columns",
    "merge_roots": "write.merge",
    "write_frames": "write.writer",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hf_lvf' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once imported, an attribute like any other
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "DEFAULT_MAX_FRAME_PIXELS",
    "DEFAULT_QUALITY",
    "MISSING_VALUES",
    "RayExecutor",
    "ClipSampler",
    "ConversionSummary",
    "InputNotFoundError",
    "MissingDependencyError",
    "ParameterError",
    "ParameterTypeError",
    "RootBusyError",
    "RootExistsError",
    "UsageError",
    "WindowIndexError",
    "WorkerLoadError",
    "DroppedVideosWarning",
    "ForkSafetyError",
    "FrameDecodeError",
    "HfLvfConfig",
    "HubError",
    "LVFError",
    "LayoutError",
    "FetchAhead",
    "FrameField",
    "RootNotFoundError",
    "SkippedVideoWarning",
    "StoreError",
    "VideoDecodeError",
    "VideoInfo",
    "VideoWindows",
    "WindowParams",
    "WindowVideo",
    "__version__",
    "add_frame_columns",
    "build_card",
    "convert_videos",
    "describe",
    "frame_table",
    "merge_roots",
    "push_card",
    "push_to_hub",
    "read_layout",
    "read_windows",
    "relocate_roots",
    "safe_dataloader",
    "save_window",
    "write_frames",
]

_set_up()  # load_dataset("hf_lvf", ...), to_iterable_dataset (see _registration)
