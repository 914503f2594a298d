"""hf_lvf: lance-video-frames roots as fixed-length frame windows for Hugging Face and PyTorch."""

from ._version import __version__
from .errors import (
    ForkSafetyError,
    FrameDecodeError,
    HubError,
    LayoutError,
    LVFError,
    RootNotFoundError,
)
from .layout import VideoInfo, read_layout
from .plan import WindowParams
from .windows import VideoWindows
from .writer import write_frames

__all__ = [
    "ForkSafetyError",
    "FrameDecodeError",
    "HubError",
    "LVFError",
    "LayoutError",
    "RootNotFoundError",
    "VideoInfo",
    "VideoWindows",
    "WindowParams",
    "__version__",
    "read_layout",
    "write_frames",
]
