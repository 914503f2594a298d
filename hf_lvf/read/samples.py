"""A root's windows as samples: the plan of its video table, the per-frame fields they carry,
and the sample dicts with their ``datasets`` features.

The glue between the pure plan (:mod:`hf_lvf.plan`) and a root's
:class:`~hf_lvf.layout.RootLayout`, in the order a sample is made: what a sample is (its
keys, features and placeholders, one definition for every front end), windows inside
spans and the span fields their samples carry, which per-frame fields a view reads at
which frames (``frame_fields=``, ``frame_offsets=``, ``delta_timestamps=``), and the plan of
a root with the sample dicts of its windows.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DroppedVideosWarning, LayoutError, ParameterError
from ..frames import FrameField
from ..layout import SAMPLE_KEYS, RootLayout
from ..layout.image_streams import offset_image_names
from ..layout.labels import LABEL, label_names
from ..layout.spans import layout_spans
from ..plan import (
    IS_PAD,
    TOLERANCE_S,
    SpanPlan,
    WindowParams,
    WindowPlan,
    check_offsets,
    offset_frames,
    plan_spans,
    plan_windows,
    video_offsets,
)
from .batches import RowFields

# ================================================================================================
# What a sample is: its keys, their ``datasets`` features, and the dicts themselves.
#
# One definition for every front end (the core view, streaming, map-style), so
# they agree on keys, order, types and the placeholders of missing metadata.
# ================================================================================================


if TYPE_CHECKING:
    import datasets


def sample_features(
    window_length: int,
    frame_size: tuple[int, int],
    fields: Mapping[str, str],
    extras: Sequence[str] = (),
) -> datasets.Features:
    """The ``datasets.Features`` of a sample: ``video`` an ``Array4D``, then the scalar keys,
    then the ``extras`` (:func:`extra_keys`), then the metadata ``fields``, typed so that
    their placeholders fit."""
    import datasets

    height, width = frame_size
    features = {
        "video": datasets.Array4D((window_length, height, width, 3), "uint8"),
        "video_idx": datasets.Value("int32"),
        "filename": datasets.Value("string"),
        "start_frame": datasets.Value("int32"),
        "frame_indices": datasets.List(datasets.Value("int32"), length=window_length),
        "sample_idx": datasets.Value("int64"),
    }
    features.update(extra_features(window_length, extras))
    features.update({name: datasets.Value(dtype) for name, dtype in fields.items()})
    return datasets.Features(features)


def build_samples(
    layout: RootLayout,
    fields: Mapping[str, str],
    idx: np.ndarray,
    video_idx: np.ndarray,
    start_frame: np.ndarray,
    frame_indices: np.ndarray,
    video: Sequence[Any],
    extras: Mapping[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """Sample dicts in FORMAT.md's key order, ``video[b]`` as the ``video`` of sample ``b``.

    ``frame_indices`` is row ``b`` of an int32 ``(n, window_length)`` array, so a plain
    ``torch.utils.data.DataLoader`` collates it to one ``(B, window_length)`` tensor.

    The per-video values come from ``layout``'s columns, taken for the whole batch at once.
    A metadata field the video lacks (or holds as ``null``) takes its dtype's
    placeholder (:data:`hf_lvf.layout.MISSING_VALUES`), so samples always collate.
    ``extras`` (``frame_is_pad``, ``timestamps``: ``(n, window_length)`` arrays) come
    after ``sample_idx``, row ``b`` for sample ``b``.
    """
    columns = {
        "video": video,
        "video_idx": video_idx.tolist(),
        "filename": layout.paths_of(video_idx),
        "start_frame": start_frame.tolist(),
        "frame_indices": frame_indices.astype(np.int32),
        "sample_idx": idx.tolist(),
        **(extras or {}),
        **layout.metadata_columns(fields, video_idx),
    }
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


#: The keys a sample gains, by the option that adds it.
EXTRA_KEYS = {"frame_is_pad": "short_videos='pad'", "timestamps": "fps="}


def extra_keys(short_videos: str, fps: float | None, fields: Mapping[str, str]) -> tuple[str, ...]:
    """The keys samples gain with these options: ``frame_is_pad`` (a ``window_length`` bool
    array, with ``short_videos="pad"``), ``timestamps`` (float64 seconds, with ``fps``).

    Raises:
        LayoutError: a metadata field of the root has the name of one of them.
    """
    keys = (("frame_is_pad",) if short_videos == "pad" else ()) + (
        ("timestamps",) if fps is not None else ()
    )
    clash = [key for key in keys if key in fields]
    if clash:
        raise LayoutError(
            f"the videos have a metadata field {clash[0]!r}, the name of the sample key "
            f"{EXTRA_KEYS[clash[0]]} adds; rename the field or leave the option unset"
        )
    return keys


def extra_features(window_length: int, keys: Sequence[str]) -> dict[str, Any]:
    """The ``datasets`` features of :func:`extra_keys`."""
    import datasets

    dtypes = {"frame_is_pad": "bool", "timestamps": "float64"}
    return {key: datasets.List(datasets.Value(dtypes[key]), length=window_length) for key in keys}


def field_features(
    fields: Iterable[Any], window_length: int, offsets: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """The ``datasets`` features of per-frame fields (:class:`~hf_lvf.frames.
    FrameField`): ``(n, *shape)`` values, ``n`` the window's frames or the field's offsets
    (then with a ``<name>_is_pad`` bool list): a ``List`` of ``Value`` for scalars and
    strings, ``Array2D``/``Array3D``/``Array4D`` for shaped fields."""
    import datasets

    arrays = {2: datasets.Array2D, 3: datasets.Array3D, 4: datasets.Array4D, 5: datasets.Array5D}
    out: dict[str, Any] = {}
    for frame_field in fields:
        n = offsets[frame_field.name].shape[1] if frame_field.name in offsets else window_length
        if not frame_field.shape:
            out[frame_field.name] = datasets.List(datasets.Value(frame_field.dtype), length=n)
        else:
            out[frame_field.name] = arrays[1 + len(frame_field.shape)](
                (n, *frame_field.shape), frame_field.dtype
            )
        if frame_field.name in offsets:
            out[frame_field.name + "_is_pad"] = datasets.List(datasets.Value("bool"), length=n)
    return out


# ================================================================================================
# Samples of windows inside spans (``windows_in="spans"``): the plan of a root's spans, and the
# ``span_idx`` and span fields each such sample carries.
#
# A window planned inside a span carries ``span_idx`` (the span's row in the root's span
# table: video by video, each video's list order) and every field of the span table
# (``caption``, ``score``...) as top-level keys, after ``sample_idx`` and before the video's
# metadata fields; a span lacking a field the others have gets its dtype's placeholder, as
# metadata does. Windows of whole videos (the default) carry nothing of spans: their keys
# stay the reference reader's (docs/format.md, "Spans", says why).
# ================================================================================================


#: The key a sample inside a span gains besides the span's fields.
SPAN_KEY = "span_idx"


def plan_root_spans(layout: RootLayout, params: WindowParams) -> SpanPlan:
    """The windows inside the spans of ``layout`` under ``params``.

    Raises:
        LayoutError: the root's videos hold no spans, or a span is malformed.
    """
    spans = layout_spans(layout)
    if len(spans) == 0:
        raise LayoutError(
            f"{layout.metadata_path} holds no spans: windows_in='spans' needs videos with a "
            "'spans' list (FORMAT.md); use windows_in='videos' for windows of whole videos"
        )
    bounds = (spans.video_idx, spans.start_frame, spans.end_frame)
    return plan_spans(*bounds, len(layout), params, offsets=spans.offsets)


def span_fields(
    layout: RootLayout, params: WindowParams, fields: Mapping[str, str], extras: tuple = ()
) -> dict[str, str]:
    """Span field -> ``datasets`` dtype of the samples of windows under ``params``: the root's
    span fields with ``windows_in="spans"``, else none.

    Raises:
        LayoutError: a span field has the name of a sample key or of a metadata field.
    """
    if params.windows_in != "spans":
        return {}
    found = layout_spans(layout).fields
    taken = {*SAMPLE_KEYS, SPAN_KEY, *extras}
    for name in found:
        if name in taken or name in fields:
            what = "a metadata field" if name in fields else "the sample key"
            raise LayoutError(
                f"{layout.metadata_path}: span field {name!r} has the name of {what} {name!r}; "
                "with windows_in='spans' a span's fields are keys of its samples: rename it"
            )
    return dict(found)


def span_columns(
    layout: RootLayout, plan: WindowPlan, idx: np.ndarray, fields: Mapping[str, str]
) -> dict[str, list[Any]]:
    """``span_idx`` and the span ``fields`` of windows ``idx`` (none outside span mode)."""
    if not isinstance(plan, SpanPlan):
        return {}
    span_idx = plan.span_of(idx)
    spans = layout_spans(layout)
    columns: dict[str, list[Any]] = {SPAN_KEY: span_idx.tolist()}
    for name in fields:
        columns[name] = spans.field_column(name, span_idx).to_pylist()
    return columns


def with_span_features(
    features: datasets.Features, metadata: Mapping[str, str], fields: Mapping[str, str]
) -> datasets.Features:
    """``features`` with ``span_idx`` and the span ``fields`` before the ``metadata`` fields,
    where samples have them."""
    import datasets

    if not fields:
        return features
    head = {k: f for k, f in features.items() if k not in metadata}
    spans = {SPAN_KEY: datasets.Value("int64")}
    spans |= {name: datasets.Value(dtype) for name, dtype in fields.items()}
    tail = {k: features[k] for k in metadata}
    return datasets.Features({**head, **spans, **tail})


# ================================================================================================
# Which per-frame fields a view's samples carry, at which frames, and their sample keys.
#
# - ``frame_fields=``: the fields read (``None``: all of the root's, ``()``: none); each is
#   gathered at the window's ``frame_indices``: ``(window_length, *shape)``.
# - ``frame_offsets=`` / ``delta_timestamps=``: a field read instead at offsets from the
#   window's last frame (:mod:`hf_lvf.plan`): ``(K, *shape)`` and ``<field>_is_pad``.
#
# The rows such offsets reach join the frame read's ``take`` (:mod:`.field_rows`).
# ================================================================================================


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
        # Keys whose rows join the frame read's take: images at offsets (a stream, the main
        # camera) are read in a take of their own (only their column), so their rows would
        # only add frames to this one.
        streams = set(offset_image_names(layout.header))
        self._row_keys = [name for name in self.offsets if name not in streams]

    @property
    def has_extra_rows(self) -> bool:
        """Whether fields are read at offsets: their rows join the frame read's take."""
        return bool(self._row_keys)

    def extra_rows(self, video_idx: np.ndarray, frame_indices: np.ndarray) -> np.ndarray | None:
        """The Lance rows the offsets of the windows' fields reach (``None`` without any)."""
        if not self._row_keys:
            return None
        reached = [self.offset_frames(name, video_idx, frame_indices)[0] for name in self._row_keys]
        return np.unique(self._start_rows[video_idx][:, None] + np.concatenate(reached, axis=1))

    def offset_frames(
        self, name: str, video_idx: np.ndarray, frame_indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(frames, is_pad)``, each ``(n, K)``: the frames key ``name``'s offsets reach
        from each window's last frame, clamped to its video, and which were clamped."""
        return offset_frames(frame_indices[:, -1], video_idx, self.offsets[name], self._num_frames)

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
        out: dict[str, Any] = {}
        for one in fields:  # in the schema's order, each mask after its field
            if one.name not in self.offsets:
                out[one.name] = plain[one.name]
                continue
            frames, is_pad = self.offset_frames(one.name, video_idx, frame_indices)
            out[one.name] = values.at(base + frames)[one.name]
            out[one.name + IS_PAD] = is_pad
        return {name: _column(value) for name, value in out.items()}


def _column(value: np.ndarray) -> Any:
    return value.tolist() if value.dtype == object else value


# ================================================================================================
# A root's windows: the plan of its video table, what a window covers, its sample dicts.
#
# The glue between the pure plan (:mod:`hf_lvf.plan`, :mod:`hf_lvf.plan`) and a
# root's :class:`~hf_lvf.layout.RootLayout`: the per-video frame rates that ``fps=``
# needs (and the video an error names), and the keys ``short_videos="pad"`` and ``fps=``
# add to samples. A sample's ``start_frame`` is its first stored frame; the plan's start
# frames count its virtual frames (they differ only with ``fps``).
# ================================================================================================


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
    (with ``layout``, the span fields of windows inside its spans: :mod:`hf_lvf.read.samples`,
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


__all__ = [
    "EXTRA_KEYS",
    "field_features",
    "build_samples",
    "extra_features",
    "extra_keys",
    "sample_features",
    "SPAN_KEY",
    "plan_root_spans",
    "span_columns",
    "span_fields",
    "with_span_features",
    "FieldPlan",
    "FieldSpec",
    "plan_root",
    "segment_info",
    "window_features",
    "window_fields",
    "window_samples",
]
