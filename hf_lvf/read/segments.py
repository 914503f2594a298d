"""A root's windows: the plan of its video table, what a window covers, its sample dicts.

The glue between the pure plan (:mod:`hf_lvf.plan`, :mod:`hf_lvf.plan.timeline`) and a
root's :class:`~hf_lvf.layout.RootLayout`: the per-video frame rates that ``fps=``
needs (and the video an error names), and the keys ``short_videos="pad"`` and ``fps=``
add to samples. A sample's ``start_frame`` is its first stored frame; the plan's start
frames count its virtual frames (they differ only with ``fps``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..layout import RootLayout
from ..plan.segment_plan import SegmentPlan, WindowParams, plan_windows
from .samples import build_samples, extra_keys, sample_features

if TYPE_CHECKING:
    import datasets


def plan_root(layout: RootLayout, params: WindowParams) -> SegmentPlan:
    """The windows of ``layout`` under ``params``.

    Raises:
        LayoutError: with ``params.fps``, a video records no frame rate (the message names
            it: its index and path).
    """
    return plan_windows(
        layout.num_frames,
        params,
        video_fps=layout.video_fps if params.fps is not None else None,
        describe_video=lambda v: f"{layout.metadata_path}: videos[{v}] ({layout.path(v)!r})",
    )


def window_fields(
    layout: RootLayout, params: WindowParams, fields: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The metadata fields samples carry: ``fields`` (several roots' together), else the
    root's own (``layout.fields``).

    Raises:
        LayoutError: a field has the name of a key ``params`` add to samples.
    """
    fields = dict(layout.fields if fields is None else fields)
    extra_keys(params.short_videos, params.fps, fields)
    return fields


def window_features(
    params: WindowParams, frame_size: tuple[int, int], fields: Mapping[str, str]
) -> datasets.Features:
    """The features of the samples of windows under ``params``, with the keys they add."""
    extras = extra_keys(params.short_videos, params.fps, fields)
    return sample_features(params.window_length, frame_size, fields, extras)


def segment_info(layout: RootLayout, plan: SegmentPlan, index: int) -> dict[str, Any]:
    """Which video and frames window ``index`` covers (and its ``frame_is_pad`` /
    ``timestamps`` when the plan adds them), without reading anything."""
    idx = plan.normalize([index])
    video_idx, start = plan.locate(idx)
    frame_indices = plan.frame_indices(start, video_idx)[0]
    v = int(video_idx[0])
    info = {
        "video_idx": v,
        "filename": layout.path(v),
        "start_frame": int(frame_indices[0]),
        "frame_indices": frame_indices.tolist(),
    }
    extras = plan.sample_columns(video_idx, start)
    return info | {name: column[0] for name, column in extras.items()}


def window_samples(
    layout: RootLayout,
    plan: SegmentPlan,
    fields: Mapping[str, str],
    idx: np.ndarray,
    video_idx: np.ndarray,
    start_frame: np.ndarray,
    frame_indices: np.ndarray,
    video: Sequence[Any],
) -> list[dict[str, Any]]:
    """:func:`hf_lvf.read.samples.build_samples` of windows ``idx`` of ``layout``, with the keys
    the plan adds; ``start_frame`` counts the plan's (virtual) frames."""
    extras = plan.sample_columns(video_idx, start_frame)
    columns = (idx, video_idx, frame_indices[:, 0], frame_indices, video)
    return build_samples(layout, fields, *columns, extras=extras)


__all__ = ["plan_root", "segment_info", "window_features", "window_fields", "window_samples"]
