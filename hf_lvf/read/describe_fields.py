"""The parts of :func:`hf_lvf.describe` about what changes inside a video: the spans of
``_metadata.json`` (count, fields, a few captions) and the per-frame fields of the Lance
table (dtype, shape, min / mean / max), as dicts and as rows of ``hf-lvf info``'s table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow.compute as pc

from ..errors import LayoutError
from ..frames.field_stats import frame_field_stats
from ..layout import RootLayout
from ..layout.spans import layout_spans

#: Example captions (or the first string field's values) listed.
EXAMPLES = 3


def span_summary(layout: RootLayout) -> dict[str, Any] | None:
    """``{"count", "videos", "frames_per_span": {"min", "mean", "max"}, "fields": {name:
    dtype}, "examples": [...]}`` of ``layout``'s spans; ``None`` when no video has any.
    ``examples`` are the first distinct values of ``caption`` (else of the first string
    field), at most three.

    Raises:
        LayoutError: a span is malformed (see :func:`hf_lvf.layout.spans.layout_spans`).
    """
    spans = layout_spans(layout)
    if len(spans) == 0:
        return None
    lengths = spans.end_frame - spans.start_frame
    fields = spans.fields
    text = [n for n, d in fields.items() if d == "string"]
    shown = "caption" if "caption" in fields else (text[0] if text else None)
    examples: list[str] = []
    if shown is not None:
        column = spans.table.column(shown).slice(0, 1000)
        examples = [v for v in pc.unique(column.drop_null()).to_pylist()][:EXAMPLES]
    return {
        "count": len(spans),
        "videos": int(np.count_nonzero(np.diff(spans.offsets))),
        "frames_per_span": {
            "min": int(lengths.min()),
            "mean": float(lengths.mean()),
            "max": int(lengths.max()),
        },
        "fields": dict(fields),
        "examples_field": shown,
        "examples": examples,
    }


def frame_field_summary(
    layout: RootLayout, storage_options: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per-frame field -> ``{"dtype", "shape", "min", "mean", "max"}`` (numbers: over every
    element of every frame; ``"examples"`` instead for strings). Scans those columns only.

    Raises:
        LayoutError, OSError: the table cannot be read or has an unsupported column.
    """
    summary = {}
    for name, stats in frame_field_stats(layout, storage_options).items():
        item: dict[str, Any] = {"dtype": stats.field.dtype, "shape": list(stats.field.shape)}
        if stats.field.is_string:
            item["examples"] = list(stats.examples)
        else:
            item |= {"min": stats.min, "mean": stats.mean, "max": stats.max}
        summary[name] = item
    return summary


def described_extras(
    layout: RootLayout, storage_options: Mapping[str, str] | None, problems: list[str]
) -> dict[str, Any]:
    """``{"spans", "frame_fields"}`` of a description; what cannot be read goes to
    ``problems`` (a description lists everything at once instead of raising)."""
    try:
        spans = span_summary(layout)
    except LayoutError as err:
        spans = None
        problems.append(f"the spans cannot be read: {err}")
    try:
        fields = frame_field_summary(layout, storage_options)
    except (LayoutError, OSError) as err:  # a column of a type no window can carry...
        fields = {}
        if not any(p.startswith("the Lance table cannot be read") for p in problems):
            problems.append(f"the per-frame fields cannot be read: {err}")
    return {"spans": spans, "frame_fields": fields}


def description_rows(described: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rows of ``hf-lvf info`` for the spans and per-frame fields of a description."""
    rows = []
    spans = described.get("spans")
    if spans:
        per = spans["frames_per_span"]
        fields = ", ".join(f"{n} ({d})" for n, d in spans["fields"].items()) or "none"
        rows.append(
            (
                "spans",
                f"{spans['count']:,} in {spans['videos']:,} videos ({per['min']:,} to "
                f"{per['max']:,} frames, mean {per['mean']:,.1f}); fields: {fields}",
            )
        )
        if spans["examples"]:
            shown = "; ".join(repr(x) for x in spans["examples"])
            rows.append((f"span {spans['examples_field']}s", f"{shown}, ..."))
    for name, field in (described.get("frame_fields") or {}).items():
        rows.append((f"per-frame {name}", frame_field_text(field)))
    return rows


def frame_field_text(field: Mapping[str, Any]) -> str:
    """``"float32 (6,), -1.2 to 3.4 (mean 0.5)"``: one per-frame field in words."""
    text = f"{field['dtype']} {tuple(field['shape'])}" if field["shape"] else field["dtype"]
    if "examples" in field:
        shown = ", ".join(repr(x) for x in field["examples"])
        return f"{text}, e.g. {shown}" if shown else text
    if field["min"] is None:
        return f"{text}, no values"
    return f"{text}, {field['min']:g} to {field['max']:g} (mean {field['mean']:g})"


__all__ = [
    "described_extras",
    "description_rows",
    "frame_field_summary",
    "frame_field_text",
    "span_summary",
]
