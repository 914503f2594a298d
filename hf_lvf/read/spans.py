"""Samples of windows inside spans (``windows_in="spans"``): the plan of a root's spans, and the
``span_idx`` and span fields each such sample carries.

A window planned inside a span carries ``span_idx`` (the span's row in the root's span
table: video by video, each video's list order) and every field of the span table
(``caption``, ``score``...) as top-level keys, after ``sample_idx`` and before the video's
metadata fields; a span lacking a field the others have gets its dtype's placeholder, as
metadata does. Windows of whole videos (the default) carry nothing of spans: their keys
stay the reference reader's (docs/format.md, "Spans", says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import LayoutError
from ..layout import SAMPLE_KEYS, RootLayout
from ..layout.spans import layout_spans
from ..plan import SpanPlan, WindowParams, WindowPlan, plan_spans

if TYPE_CHECKING:
    import datasets

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


__all__ = ["SPAN_KEY", "plan_root_spans", "span_columns", "span_fields", "with_span_features"]
