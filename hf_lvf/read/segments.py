"""A root's windows: the plan of its video table, what a window covers, its sample dicts.

The glue between the pure plan (:mod:`hf_lvf.plan`, :mod:`hf_lvf.plan`) and a
root's :class:`~hf_lvf.layout.RootLayout`: the per-video frame rates that ``fps=``
needs (and the video an error names), and the keys ``short_videos="pad"`` and ``fps=``
add to samples. A sample's ``start_frame`` is its first stored frame; the plan's start
frames count its virtual frames (they differ only with ``fps``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DroppedVideosWarning
from ..layout import RootLayout
from ..layout.labels import LABEL, label_names
from ..plan import WindowParams, WindowPlan, plan_windows
from .samples import build_samples, extra_keys, sample_features
from .spans import plan_root_spans, span_columns, span_fields, with_span_features

if TYPE_CHECKING:
    import datasets


def plan_root(layout: RootLayout, params: WindowParams) -> WindowPlan:
    """The windows of ``layout`` under ``params``.

    Raises:
        LayoutError: with ``params.fps``, a video records no frame rate (the message names
            it: its index and path); with ``params.windows_in="spans"``, the root holds no
            spans or a malformed one.
    """
    if params.windows_in == "spans":
        return plan_root_spans(layout, params)
    plan = plan_windows(
        layout.num_frames,
        params,
        video_fps=layout.video_fps if params.fps is not None else None,
        describe_video=lambda v: f"{layout.metadata_path}: videos[{v}] ({layout.path(v)!r})",
    )
    dropped = int(np.count_nonzero(plan.windows_per_video == 0))
    if 0 < dropped < len(layout):
        least = max(params.span, params.min_video_frames or 0)
        have = "has" if dropped == 1 else "have"
        warnings.warn(
            f"root {layout.uri!r}: {dropped} of {len(layout)} videos {have} fewer than {least} "
            f"frames (one window of window_length={params.window_length}, frame_skip="
            f"{params.frame_skip}{_least_text(params)}) and give no windows; pass "
            "short_videos='pad' to keep them (padded), or a smaller window_length",
            DroppedVideosWarning,
            stacklevel=2,
        )
    return plan


def _least_text(params: WindowParams) -> str:
    if params.min_video_frames is None:
        return ""
    return f", min_video_frames={params.min_video_frames}"


def window_fields(
    layout: RootLayout, params: WindowParams, fields: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The metadata fields samples carry: ``fields`` (several roots' together), else the
    root's own (``layout.fields``).

    Raises:
        LayoutError: a field has the name of a key ``params`` add to samples (or, inside
            spans, of a span field).
    """
    fields = dict(layout.fields if fields is None else fields)
    extra_keys("pad" if params.pads else "drop", params.fps, fields)
    span_fields(layout, params, fields)
    return fields


def window_features(
    params: WindowParams,
    frame_size: tuple[int, int],
    fields: Mapping[str, str],
    layout: RootLayout | None = None,
) -> datasets.Features:
    """The features of the samples of windows under ``params``, with the keys they add
    (with ``layout``, the span fields of windows inside its spans: :mod:`hf_lvf.read.spans`,
    and ``label`` a ``ClassLabel`` where it names its labels: :func:`hf_lvf.layout.label_names`).
    """
    extras = extra_keys("pad" if params.pads else "drop", params.fps, fields)
    features = sample_features(params.window_length, frame_size, fields, extras)
    spans = {} if layout is None else span_fields(layout, params, fields)
    features = with_span_features(features, fields, spans)
    return with_class_labels(features, None if layout is None else label_names(layout, fields))


def with_class_labels(
    features: datasets.Features, label_names: Sequence[str] | None
) -> datasets.Features:
    """``features`` with ``label`` a ``datasets.ClassLabel`` of ``label_names``, if both are
    there (it stores the same int64 values, and gives ``.names``, ``int2str`` and
    ``train_test_split(stratify_by_column="label")``)."""
    if label_names is not None and LABEL in features:
        import datasets

        features[LABEL] = datasets.ClassLabel(names=list(label_names))
    return features


def segment_info(layout: RootLayout, plan: WindowPlan, index: int) -> dict[str, Any]:
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
        "frame_indices": frame_indices.astype(np.int32),
    }
    extras = plan.sample_columns(video_idx, start)
    spans = span_columns(layout, plan, idx, span_fields(layout, plan.params, layout.fields))
    return (
        info
        | {name: column[0] for name, column in (extras | spans).items()}
        | {name: column[0] for name, column in extras.items()}
    )


def window_samples(
    layout: RootLayout,
    plan: WindowPlan,
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
    extras |= span_columns(layout, plan, idx, span_fields(layout, plan.params, fields))
    columns = (idx, video_idx, frame_indices[:, 0], frame_indices, video)
    return build_samples(layout, fields, *columns, extras=extras)


__all__ = ["plan_root", "segment_info", "window_features", "window_fields", "window_samples"]
