"""hf_lvf: lance-video-frames roots as fixed-length frame windows for Hugging Face and PyTorch."""

from ._feature import WindowVideo
from ._version import __version__
from .builder import HfLvfConfig
from .card import build_card
from .convert import ConversionSummary, convert_videos
from .decode import DEFAULT_QUALITY
from .describe import describe
from .errors import (
    ForkSafetyError,
    FrameDecodeError,
    HubError,
    LayoutError,
    LVFError,
    RootNotFoundError,
    SkippedVideoWarning,
    StoreError,
    VideoDecodeError,
)
from .frames import FetchAhead
from .layout import MISSING_VALUES, VideoInfo, read_layout
from .loader import safe_dataloader
from .merge import merge_roots
from .plan import WindowParams
from .publish import push_card, push_to_hub
from .references import relocate_roots
from .sampler import ClipSampler
from .show import save_window
from .sizes import DEFAULT_MAX_FRAME_PIXELS
from .windows import VideoWindows
from .writer import write_frames

__all__ = [
    "DEFAULT_MAX_FRAME_PIXELS",
    "DEFAULT_QUALITY",
    "MISSING_VALUES",
    "ClipSampler",
    "ConversionSummary",
    "ForkSafetyError",
    "FrameDecodeError",
    "HfLvfConfig",
    "HubError",
    "LVFError",
    "LayoutError",
    "FetchAhead",
    "RootNotFoundError",
    "SkippedVideoWarning",
    "StoreError",
    "VideoDecodeError",
    "VideoInfo",
    "VideoWindows",
    "WindowParams",
    "WindowVideo",
    "__version__",
    "build_card",
    "convert_videos",
    "describe",
    "merge_roots",
    "push_card",
    "push_to_hub",
    "read_layout",
    "relocate_roots",
    "safe_dataloader",
    "save_window",
    "write_frames",
]
