"""The preview picture of a card: a contact sheet of real frames, as PNG.

Pillow is used here (besides :mod:`hf_lvf.decode`) only to encode the sheet as PNG.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ParameterError
from ..layout import RootLayout, read_layout
from ..plan import WindowParams
from ..read.show import contact_sheet
from ..read.windows import VideoWindows

if TYPE_CHECKING:
    pass


def render_preview(
    root: str | os.PathLike[str] | RootLayout,
    *,
    storage_options: Mapping[str, str] | None = None,
    max_videos: int = 4,
    frames_per_video: int = 6,
    tile_width: int | None = None,
) -> bytes:
    """A contact sheet of real frames as PNG bytes: one row per video, frames evenly spaced.

    Args:
        root: the root, or its layout.
        storage_options: for reading the root.
        max_videos: rows; videos are picked evenly across the video table.
        frames_per_video: columns; frames are picked evenly through each video.
        tile_width: width of a frame in the sheet; default 2x the first video's, within 128-192.

    Raises:
        ValueError: ``max_videos`` or ``frames_per_video`` is < 1.
        FrameDecodeError: a picked frame is corrupt.
    """
    from PIL import Image

    for name, value in (("max_videos", max_videos), ("frames_per_video", frames_per_video)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    layout = (
        root
        if isinstance(root, RootLayout)
        else read_layout(os.fspath(root), storage_options=storage_options)
    )
    videos = _preview_videos(layout, max_videos)
    first_height, first_width = (int(s) for s in layout.frame_sizes[videos[0]])
    if tile_width is None:
        tile_width = min(max(2 * first_width, 128), 192)
    tile_height = max(1, round(tile_width * first_height / first_width))
    windows = VideoWindows.from_layout(
        layout,
        WindowParams(window_length=1),
        frame_size=(tile_height, tile_width),
        storage_options=storage_options,
    )
    lengths = layout.num_frames
    columns = min(frames_per_video, int(lengths[videos].max()))
    picks = []
    for v in videos:
        num_frames = int(lengths[v])
        frames = np.unique(
            np.linspace(0, num_frames - 1, min(columns, num_frames)).round().astype(np.int64)
        )
        picks.append(windows.plan.first_window[v] + frames)
    tiles = windows.read_video(np.concatenate(picks))[:, 0]
    ends = np.cumsum([len(frames) for frames in picks]).tolist()
    sheet = contact_sheet(
        [list(tiles[end - len(frames) : end]) for frames, end in zip(picks, ends, strict=True)]
    )
    buf = io.BytesIO()
    Image.fromarray(sheet, "RGB").save(buf, format="PNG")
    return buf.getvalue()


def _preview_videos(layout: RootLayout, max_videos: int) -> list[int]:
    candidates = np.flatnonzero(layout.num_frames > 0)
    if len(candidates) <= max_videos:
        return candidates.tolist()
    picks = np.linspace(0, len(candidates) - 1, max_videos).round().astype(int)
    return [int(candidates[i]) for i in dict.fromkeys(picks.tolist())]
