"""``HfLvfConfig``: the options of ``load_dataset("hf_lvf", ...)``, validated when it is made."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import datasets

from ..errors import ParameterError
from ..plan import DEFAULT_MAX_FRAME_PIXELS, TOLERANCE_S, Crop, FrameSizing, WindowParams
from ..read.samples import FieldSpec
from .shards import ClipConfig


@dataclass(kw_only=True)
class HfLvfConfig(ClipConfig, datasets.BuilderConfig):
    """Options of ``load_dataset("hf_lvf", ...)``; all take part in the cache key.

    Args:
        window_length, frame_skip, hop_size, min_video_frames: how windows are cut: see
            :class:`hf_lvf.WindowParams`, where each window option is documented.
        short_videos, fps, windows_in, sampling: window options too: see
            :class:`hf_lvf.WindowParams`.
        frame_size: ``(H, W)`` to resize every frame to; needed when videos differ in size.
        crop: ``"none"`` stretches frames to ``frame_size``; ``"center"`` keeps their aspect
            ratio: scales them to cover ``frame_size`` and cuts out the middle.
        max_frame_pixels: roots whose videos declare larger frames (``H * W``) are
            refused, and so is a larger ``frame_size``; default 2**25.
        max_batch_bytes: a read whose decoded frames need more is refused before
            allocating; default: half the reading machine's physical memory.
        decode_scaled: JPEG frames read at a ``frame_size`` of at most 1/2, 1/4 or 1/8 of
            their size decode straight to that scale (libjpeg's DCT scaling); ``False``
            decodes them at full size first.
        proxies: a ``frame_size`` that a proxy stream covers reads the smallest such proxy
            (``hf_lvf.add_proxy``); ``False``: always the full frames; a proxy's name: always
            that one (see :class:`hf_lvf.plan.FrameSizing`).
        shard_windows: windows (with ``clips_per_video``: clips) per shard (streaming and
            cache generation); default: a power of two up to 64 shards a split, >= 8 each.
        clips_per_video, clip_sampling, clip_seed: some windows of each video per epoch:
            see ``ClipConfig``.
        frame_fields, frame_offsets, delta_timestamps, tolerance_s: the per-frame fields
            samples carry (default: all of the root's; a map-style dataset's rows hold their
            values) and those read at offsets from a window's last frame: see
            ``VideoWindows``.
        streams: the image streams (cameras) samples carry, each an ``Array4D`` feature of
            its own: ``None`` (default) every one but proxies, ``[]`` none; a stream not
            named is not read (see ``VideoWindows``).

    Raises:
        ValueError: a value is out of range (the message names it).
    """

    window_length: int = 1
    frame_skip: int = 0
    hop_size: int = 1
    min_video_frames: int | None = None
    frame_size: tuple[int, int] | None = None
    crop: Crop = "none"
    max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS
    max_batch_bytes: int | None = None
    decode_scaled: bool = True
    proxies: bool | str = True
    shard_windows: int | None = None
    windows_in: Literal["videos", "spans"] = "videos"
    sampling: str = "windows"
    frame_fields: Sequence[str] | None = None
    frame_offsets: Mapping[str, Sequence[int]] | None = None
    delta_timestamps: Mapping[str, Sequence[float]] | None = None
    tolerance_s: float = TOLERANCE_S
    streams: Sequence[str] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _ = self.field_spec  # validates the field options
        _ = self.params  # validates window_length, frame_skip, hop_size, min_video_frames
        self.frame_size = self.sizing.frame_size  # validates the size options
        if self.streams is not None:
            if isinstance(self.streams, str) or not isinstance(self.streams, Sequence):
                raise ParameterError(
                    f"streams must be a list of stream names, got {self.streams!r}"
                )
            self.streams = list(self.streams)
        if self.shard_windows is not None and (
            isinstance(self.shard_windows, bool)
            or not isinstance(self.shard_windows, int)
            or self.shard_windows < 1
        ):
            raise ParameterError(
                f"shard_windows must be an integer >= 1, got {self.shard_windows!r}"
            )

    @property
    def params(self) -> WindowParams:
        return WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=self.hop_size,
            min_video_frames=self.min_video_frames,
            windows_in=self.windows_in,
            sampling=self.sampling,
            **self.timing,
        )

    @property
    def field_spec(self) -> FieldSpec:
        return FieldSpec.of(
            self.frame_fields, self.frame_offsets, self.delta_timestamps, self.tolerance_s
        )

    def check_mode(self, *, streaming: bool) -> None:
        """Raise for what a map-style dataset's fixed rows of references cannot hold."""
        super().check_mode(streaming=streaming)
        if streaming:
            return
        if self.sampling != "windows":
            raise ParameterError(
                f"sampling={self.sampling!r} is read with streaming=True (or through "
                "hf_lvf.VideoWindows / to_iterable_dataset); a map-style dataset plans windows"
            )

    @property
    def sizing(self) -> FrameSizing:
        return FrameSizing(
            frame_size=self.frame_size,
            crop=self.crop,
            max_frame_pixels=self.max_frame_pixels,
            max_batch_bytes=self.max_batch_bytes,
            decode_scaled=self.decode_scaled,
            proxies=self.proxies,
        )


__all__ = ["HfLvfConfig"]
