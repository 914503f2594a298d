"""Which per-frame fields a view's samples carry, at which frames, and their sample keys.

- ``frame_fields=``: the fields read (``None``: all of the root's, ``()``: none); each is
  gathered at the window's ``frame_indices``: ``(window_length, *shape)``.
- ``frame_offsets=`` / ``delta_timestamps=``: a field read instead at offsets from the
  window's last frame (:mod:`hf_lvf.plan`): ``(K, *shape)`` and ``<field>_is_pad``.

The rows such offsets reach join the frame read's ``take`` (:mod:`.field_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..layout import RootLayout
from ..layout.frame_fields import FrameField
from ..plan import IS_PAD, TOLERANCE_S, check_offsets, offset_frames, video_offsets
from .field_rows import RowFields


@dataclass(frozen=True)
class FieldSpec:
    """The field options of a view, validated (no file opened)."""

    selection: tuple[str, ...] | None = None
    frame_offsets: dict[str, tuple[int, ...]] = field(default_factory=dict)
    delta_timestamps: dict[str, tuple[float, ...]] = field(default_factory=dict)
    tolerance_s: float = TOLERANCE_S

    @classmethod
    def of(
        cls,
        frame_fields: Iterable[str] | None = None,
        frame_offsets: Mapping[str, Iterable[int]] | None = None,
        delta_timestamps: Mapping[str, Iterable[float]] | None = None,
        tolerance_s: float = TOLERANCE_S,
    ) -> FieldSpec:
        """Raises ``ValueError``: not a list of names, bad offsets (see ``check_offsets``)."""
        if frame_fields is not None:
            if isinstance(frame_fields, str) or not isinstance(frame_fields, Iterable):
                raise ParameterError(
                    f"frame_fields must be a list of per-frame field names (or None: all), "
                    f"got {frame_fields!r}"
                )
            frame_fields = tuple(frame_fields)
            bad = [name for name in frame_fields if not isinstance(name, str)]
            if bad:
                raise ParameterError(f"frame_fields must hold field names (str), got {bad[0]!r}")
        if isinstance(tolerance_s, bool) or not isinstance(tolerance_s, (int, float)):
            raise ParameterError(
                f"tolerance_s must be a number of seconds >= 0, got {tolerance_s!r}"
            )
        if not tolerance_s >= 0:
            raise ParameterError(
                f"tolerance_s must be a number of seconds >= 0, got {tolerance_s!r}"
            )
        frames, seconds = check_offsets(frame_offsets, delta_timestamps)
        return cls(frame_fields, frames, seconds, float(tolerance_s))

    @property
    def offset_keys(self) -> tuple[str, ...]:
        return (*self.frame_offsets, *self.delta_timestamps)

    @property
    def read(self) -> tuple[str, ...] | None:
        """The fields a reader reads: the selection and the fields read at offsets."""
        if self.selection is None:
            return None
        return tuple(dict.fromkeys((*self.selection, *self.offset_keys)))


class FieldPlan:
    """A view's field keys: which rows they need, and their sample columns.

    Args:
        layout: the root's video table (frame counts, rates for seconds).
        spec: the options.

    Raises:
        ValueError: an offset in seconds off a video's frame grid.
        LayoutError: offsets in seconds for a video without a rate.
    """

    def __init__(self, layout: RootLayout, spec: FieldSpec):
        self.spec = spec
        self._num_frames = layout.num_frames
        self._start_rows = layout.start_rows
        frames = dict(spec.frame_offsets)
        seconds = dict(spec.delta_timestamps)
        fps = layout.video_fps if seconds else np.zeros(len(layout), np.float64)
        self.offsets = video_offsets(
            frames,
            seconds,
            fps,
            tolerance_s=spec.tolerance_s,
            describe_video=lambda v: f"{layout.metadata_path}: videos[{v}] ({layout.path(v)!r})",
        )

    def extra_rows(self, video_idx: np.ndarray, frame_indices: np.ndarray) -> np.ndarray | None:
        """The Lance rows the offsets of windows reach (``None`` without offsets)."""
        if not self.offsets:
            return None
        last = frame_indices[:, -1]
        reached = [
            offset_frames(last, video_idx, offsets, self._num_frames)[0]
            for offsets in self.offsets.values()
        ]
        return np.unique(self._start_rows[video_idx][:, None] + np.concatenate(reached, axis=1))

    def columns(
        self,
        fields: Sequence[FrameField],
        video_idx: np.ndarray,
        frame_indices: np.ndarray,
        values: RowFields,
    ) -> dict[str, Any]:
        """The sample columns of ``fields``: arrays with a first axis of windows (strings: a
        list of lists), and each offset field's ``_is_pad`` mask."""
        base = self._start_rows[video_idx][:, None]
        plain = values.at(base + frame_indices) if values.values else {}
        last = frame_indices[:, -1]
        out: dict[str, Any] = {}
        for one in fields:  # in the schema's order, each mask after its field
            offsets = self.offsets.get(one.name)
            if offsets is None:
                out[one.name] = plain[one.name]
                continue
            frames, is_pad = offset_frames(last, video_idx, offsets, self._num_frames)
            out[one.name] = values.at(base + frames)[one.name]
            out[one.name + IS_PAD] = is_pad
        return {name: _column(value) for name, value in out.items()}


def _column(value: np.ndarray) -> Any:
    return value.tolist() if value.dtype == object else value


__all__ = ["FieldPlan", "FieldSpec"]
