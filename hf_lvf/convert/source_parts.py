"""Part of a file as a video: a byte range (a tar member), frames at given times (a LeRobot
episode in a file of several), per-frame values to write beside the frames, and spans.

What a source carries to a worker beyond its file; all picklable.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# LeRobot's default ``tolerance_s``: a frame is the one nearest the asked time, and must be
# closer than this (lerobot/datasets/video_utils.py, decode_video_frames).
TIME_TOLERANCE_S = 1e-4


class _BadClip(Exception):
    """The clip cannot be cut from its file (turned into a skip or an error by the task)."""


@dataclass(frozen=True)
class FrameTable:
    """Per-frame values of one video: keyed by frame index or by time in seconds.

    ``keys`` are frame indices (``by="frame"``) or times (``by="time"``, turned into frames
    at the converted fps: ``round(t * fps)``); every stored frame needs exactly one value.
    """

    by: str  # "frame" | "time" | "all" (values one per stored frame) | "episode" (below)
    keys: Any  # numpy array, or None for "all" / "episode"
    values: Mapping[str, Any]  # dotted name -> (n, *shape) array or n strings
    # "episode": the rows of a LeRobot episode, read by the worker from this parquet file
    # (a local path or hf:// URI), so the parent never holds a dataset's per-frame columns.
    file: str | None = None
    episode: int | None = None
    tasks: Mapping[int, str] | None = field(default=None, repr=False)

    def per_frame(self, num_frames: int, fps: float | None, where: str) -> dict[str, Any]:
        """``{name: T values in frame order}``.

        Raises:
            _BadClip: a frame without a value, or a key given twice or outside the video.
        """
        if self.by == "all":
            return dict(self.values)
        keys = np.asarray(self.keys)
        if self.by == "time":
            if not fps:
                raise _BadClip(
                    f"per-frame values of {where} are keyed by time but its fps is unknown"
                )
            keys = np.rint(keys.astype(np.float64) * fps).astype(np.int64)
        keys = keys.astype(np.int64)
        order = np.argsort(keys, kind="stable")
        if not np.array_equal(keys[order], np.arange(num_frames)):
            missing = np.setdiff1d(np.arange(num_frames), keys)
            extra = np.setdiff1d(keys, np.arange(num_frames))
            counts = np.bincount(keys[(keys >= 0) & (keys < num_frames)], minlength=num_frames)
            twice = np.flatnonzero(counts > 1)
            raise _BadClip(
                f"per-frame values of {where} must give each of its {num_frames} frames one "
                f"value: frames without one {missing[:5].tolist()!r}, outside the video "
                f"{extra[:5].tolist()!r}, given twice {twice[:5].tolist()!r}"
            )
        out: dict[str, Any] = {}
        for name, values in self.values.items():
            if isinstance(values, (list, tuple)):
                out[name] = [values[i] for i in order]
            else:
                out[name] = np.asarray(values)[order]
        return out


@dataclass(frozen=True)
class Clip:
    """What of ``file`` a task converts, and what it writes beside the frames.

    Attributes:
        member: ``(offset, size)``: the video is these bytes of the file (a tar member).
        times: decode the frames nearest these times in seconds (LeRobot's rule).
        fps: the rate to record (LeRobot's ``info.json``), else the decoder's.
        frames: per-frame values to write as per-frame fields.
        label: how to name the clip in messages (``"shard 'a.tar' key '000001'"``).
        streams: more images of each frame (other cameras of a LeRobot episode): ``(stream
            name, file, times)`` each, its frames decoded at its own times, as many as
            ``times``, and written as an image stream of that name (FORMAT.md).
    """

    member: tuple[int, int] | None = None
    times: tuple[float, ...] | None = None
    fps: float | None = None
    frames: FrameTable | None = field(default=None, repr=False)
    label: str | None = None
    streams: tuple[tuple[str, str, tuple[float, ...]], ...] = ()


class MemberFile(io.RawIOBase):
    """The bytes ``[offset, offset + size)`` of a file, as a seekable read-only file."""

    def __init__(self, file: str, offset: int, size: int):
        self._f = open(file, "rb")  # noqa: SIM115  (closed by close())
        self._start, self._size, self._pos = offset, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        self._pos = max(0, min(self._size, base + pos))
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._size - self._pos)
        if n <= 0:
            return 0
        self._f.seek(self._start + self._pos)
        data = self._f.read(n)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        self._f.close()
        super().close()


def at_times(decoded: Iterator[Any], times: Sequence[float]) -> Iterator[Any]:
    """For each of ``times`` (ascending), the decoded frame whose time is nearest (the
    earlier on a tie), as LeRobot's decoder picks it; it must be within
    :data:`TIME_TOLERANCE_S`.

    Raises:
        _BadClip: no frame within the tolerance of a time.
    """
    previous, current = None, next(decoded, None)
    for t in times:
        while current is not None and current.time is not None and current.time < t:
            previous, current = current, next(decoded, None)
        candidates = [f for f in (previous, current) if f is not None and f.time is not None]
        if not candidates:
            raise _BadClip(f"no frame decoded at or near {t:.6f} s")
        best = min(candidates, key=lambda f: abs(f.time - t))
        if abs(best.time - t) >= TIME_TOLERANCE_S:
            raise _BadClip(
                f"no frame within {TIME_TOLERANCE_S} s of {t:.6f} s (nearest at "
                f"{best.time:.6f} s): the timestamps do not match the video file"
            )
        yield best
