"""Windows as pictures: a window as the model sees it (an animated WebP or GIF, or a PNG contact
sheet), and the preview picture of a card.

:func:`save_window` reads one window through a :class:`~hf_lvf.VideoWindows` (so with all
its reading options: ``frame_size``, ``crop``, ``frame_skip``...) and writes it where a
person can look at it; ``hf-lvf show`` is the same from the command line.
:func:`contact_sheet` lays frames out in a grid; :func:`render_preview` makes the card's
preview from it. Pillow encodes the pictures and draws the frame numbers (besides
:mod:`hf_lvf.decode`, only here).
"""

from __future__ import annotations

import io
import math
import numbers
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from ..layout import RootLayout, read_layout
from ..layout.image_streams import main_camera
from ..plan import WindowParams
from ..read.windows import VideoWindows

# ================================================================================================
# A window as the model sees it, as a picture: an animated WebP or GIF, or a PNG contact sheet.
#
# :func:`save_window` reads one window through a :class:`~hf_lvf.VideoWindows` (so with all
# its reading options: ``frame_size``, ``crop``, ``frame_skip``...) and writes it where a
# person can look at it; ``hf-lvf show`` is the same from the command line.
# :func:`contact_sheet` lays frames out in a grid (the card's preview picture uses it too).
# Pillow encodes the pictures and draws the frame numbers.
# ================================================================================================


#: How long a frame of an animation is shown when its video's frame rate is not recorded
#: (and none is given): 100 ms, 10 frames a second.
DEFAULT_FRAME_MS = 100


#: Frames per row of a window's contact sheet.
SHEET_COLUMNS = 8


#: Pixels between the tiles of a contact sheet, and around them.
SHEET_GAP = 4


#: Height of the band under each tile that holds its caption (the frame number).
CAPTION_HEIGHT = 14


_BACKGROUND = 24


_TEXT = (235, 235, 235)


_SUFFIXES = {".webp": "WEBP", ".gif": "GIF", ".png": "PNG"}


def save_window(
    windows: VideoWindows,
    index: int,
    path: str | os.PathLike[str],
    *,
    fps: float | None = None,
    lossless: bool = False,
    quality: int = 90,
) -> dict[str, Any]:
    """Write window ``index`` of ``windows``, as the model sees it, to a picture at ``path``.

    The format follows the file name:

    - ``.webp``, ``.gif``: an animation of the window's frames, one frame per window frame,
      each shown for as long as the frames it stands for last at its video's frame rate
      (``(frame_skip + 1) / fps`` seconds; ``fps`` from the root's metadata, else
      ``fps=``, else :data:`DEFAULT_FRAME_MS`). Encoders show identical consecutive frames
      as one frame for their summed time. WebP is lossy at ``quality`` unless
      ``lossless=True``; GIF holds 256 colours.
    - ``.png``: a contact sheet of the window's frames, :data:`SHEET_COLUMNS` a row, each
      with its frame number under it; the pixels are the window's, unchanged.

    The file appears whole or not at all.

    Args:
        windows: the view, with the reading options to show.
        index: the window (negative counts from the end).
        path: the file to write (``.webp``, ``.gif`` or ``.png``).
        fps: frame rate to play the animation at, instead of the video's.
        lossless: lossless WebP (exactly the window's pixels).
        quality: WebP quality, 0-100, when lossy.

    Returns:
        The window's sample (the dict ``windows[index]`` gives).

    Raises:
        ValueError: the file name ends otherwise, or an argument is out of range.
        IndexError: ``index`` is out of range.

    Examples:
        >>> w = hf_lvf.VideoWindows("clips/", window_length=16, frame_size=(224, 224),
        ...                         crop="center")  # doctest: +SKIP
        >>> sample = hf_lvf.save_window(w, 37, "window37.webp")  # doctest: +SKIP
    """
    target = Path(path)
    image_format = _SUFFIXES.get(target.suffix.lower())
    if image_format is None:
        raise ParameterError(
            f"cannot tell the picture format of {str(path)!r}: its name must end in "
            f"{', '.join(_SUFFIXES)}"
        )
    if fps is not None and (
        isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not fps > 0
    ):
        raise ParameterError(f"fps must be a number > 0, got {fps!r}")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 100:
        raise ParameterError(f"quality must be an integer from 0 to 100, got {quality!r}")
    sample = windows[index]
    frames = np.asarray(sample["video"])
    from PIL import Image

    if image_format == "PNG":
        sheet = contact_sheet(
            [frames[k : k + SHEET_COLUMNS] for k in range(0, len(frames), SHEET_COLUMNS)],
            captions=[
                [str(f) for f in sample["frame_indices"][k : k + SHEET_COLUMNS]]
                for k in range(0, len(frames), SHEET_COLUMNS)
            ],
        )
        images, options = [Image.fromarray(sheet, "RGB")], {}
    else:
        images = [Image.fromarray(frame, "RGB") for frame in frames]
        options = {
            "save_all": True,
            "append_images": images[1:],
            "duration": frame_duration_ms(windows, sample["video_idx"], fps),
            "loop": 0,
        }
        if image_format == "WEBP":
            options.update(lossless=lossless, quality=100 if lossless else quality)
    _write_atomically(target, lambda f: images[0].save(f, format=image_format, **options))
    return sample


def frame_duration_ms(windows: VideoWindows, video_idx: int, fps: float | None = None) -> int:
    """Milliseconds one window frame of video ``video_idx`` lasts: ``frame_skip + 1`` frames at
    ``fps``, else at the video's recorded frame rate, else :data:`DEFAULT_FRAME_MS`."""
    if fps is None:
        recorded = float(windows.layout.video_fps[video_idx])
        fps = recorded if math.isfinite(recorded) and recorded > 0 else None
    if fps is None:
        return DEFAULT_FRAME_MS
    return max(1, round(1000 * (windows.params.frame_skip + 1) / fps))


def contact_sheet(
    rows: Sequence[Sequence[np.ndarray]],
    *,
    captions: Sequence[Sequence[str]] | None = None,
    gap: int = SHEET_GAP,
) -> np.ndarray:
    """Tiles (``(H, W, 3)`` uint8, all one size) in a grid, one list of them a row, ``gap``
    pixels apart on a dark background; with ``captions``, each tile's text in a band of
    :data:`CAPTION_HEIGHT` pixels under it. Returns the ``(height, width, 3)`` picture."""
    first = next(tile for row in rows for tile in row)
    tile_height, tile_width = first.shape[:2]
    band = CAPTION_HEIGHT if captions is not None else 0
    columns = max(len(row) for row in rows)
    sheet = np.full(
        (len(rows) * (tile_height + band + gap) + gap, columns * (tile_width + gap) + gap, 3),
        _BACKGROUND,
        np.uint8,
    )
    for r, row in enumerate(rows):
        for c, tile in enumerate(row):
            y, x = tile_origin(r, c, (tile_height, tile_width), captions is not None, gap)
            sheet[y : y + tile_height, x : x + tile_width] = tile
    if captions is None:
        return sheet
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.fromarray(sheet, "RGB")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default()
    for r, texts in enumerate(captions):
        for c, text in enumerate(texts):
            y, x = tile_origin(r, c, (tile_height, tile_width), True, gap)
            draw.text((x + 1, y + tile_height + 1), text, fill=_TEXT, font=font)
    return np.asarray(picture)


def tile_origin(
    row: int, column: int, tile_size: tuple[int, int], captions: bool, gap: int = SHEET_GAP
) -> tuple[int, int]:
    """``(y, x)`` of the top left pixel of the tile at ``row``, ``column`` of a contact sheet."""
    tile_height, tile_width = tile_size
    band = CAPTION_HEIGHT if captions else 0
    return gap + row * (tile_height + band + gap), gap + column * (tile_width + gap)


def describe_sample(sample: dict[str, Any]) -> list[tuple[str, str]]:
    """``(key, value)`` rows of a sample for people: arrays as their dtype and shape, but
    ``frame_indices`` as its frame numbers."""
    rows = []
    for key, value in sample.items():
        if key == "frame_indices":
            text = str(np.asarray(value).tolist())
        elif isinstance(value, np.ndarray):
            text = f"{value.dtype} array {tuple(value.shape)}"
        else:
            text = str(value.tolist() if isinstance(value, np.generic) else value)
        rows.append((key, text))
    return rows


def _write_atomically(target: Path, write: Any) -> None:
    """``write(file)`` into a temporary file beside ``target``, then put it in its place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as f:
            write(f)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's 0600 -> what open() would give
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (read by setting it, and setting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ================================================================================================
# The preview picture of a card: a contact sheet of real frames, as PNG.
#
# Pillow is used here (besides :mod:`hf_lvf.decode`) only to encode the sheet as PNG.
# ================================================================================================


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
    """A contact sheet of real frames as PNG bytes: one row per video, frames evenly spaced;
    for a root with cameras (image streams, proxies aside), one strip per camera, each row
    of a video's strip captioned with the camera's name on its first frame.

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
    ends = np.cumsum([len(frames) for frames in picks]).tolist()
    cameras = list(windows.streams)
    if not cameras:
        tiles = windows.read_video(np.concatenate(picks))[:, 0]
        sheet = contact_sheet(
            [list(tiles[end - len(frames) : end]) for frames, end in zip(picks, ends, strict=True)]
        )
    else:  # every camera read in the same takes as video, at the tile size
        samples = windows.take(np.concatenate(picks))
        names = [("video", main_camera(layout.header) or "video"), *((c, c) for c in cameras)]
        rows, captions = [], []
        for frames, end in zip(picks, ends, strict=True):
            for key, label in names:
                rows.append([s[key][0] for s in samples[end - len(frames) : end]])
                captions.append([label.rsplit(".", 1)[-1], *[""] * (len(frames) - 1)])
        sheet = contact_sheet(rows, captions=captions)
    buf = io.BytesIO()
    Image.fromarray(sheet, "RGB").save(buf, format="PNG")
    return buf.getvalue()


def _preview_videos(layout: RootLayout, max_videos: int) -> list[int]:
    candidates = np.flatnonzero(layout.num_frames > 0)
    if len(candidates) <= max_videos:
        return candidates.tolist()
    picks = np.linspace(0, len(candidates) - 1, max_videos).round().astype(int)
    return [int(candidates[i]) for i in dict.fromkeys(picks.tolist())]
