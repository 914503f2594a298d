"""hf_lvf: lance-video-frames roots as fixed-length frame windows for Hugging Face and PyTorch."""

from ._moved import install as _install_moved
from ._version import __version__
from .card import build_card
from .convert import ConversionSummary, convert_videos
from .decode import DEFAULT_QUALITY
from .engines.ray_data import RayExecutor, frame_table, read_windows
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
from .frames import FetchAhead
from .hf.builder import HfLvfConfig
from .hf.feature import WindowVideo
from .hf.references import relocate_roots
from .layout import MISSING_VALUES, VideoInfo, read_layout
from .layout.frame_fields import FrameField
from .plan.segment_plan import WindowParams
from .plan.sizes import DEFAULT_MAX_FRAME_PIXELS
from .publish import push_card, push_to_hub
from .read.describe import describe
from .read.show import save_window
from .read.windows import VideoWindows
from .training.loader import safe_dataloader
from .training.sampler import ClipSampler
from .write.columns import add_frame_columns
from .write.merge import merge_roots
from .write.writer import write_frames

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

_install_moved()  # old module paths (pickles made before the packages by layer)
