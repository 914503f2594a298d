"""The card's "Inside the videos" section: the spans of the roots (count, fields, a few
captions, the load option that reads windows inside them) and their per-frame fields (dtype,
shape, min / mean / max), as the rows the template prints."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..errors import LayoutError
from .describe import frame_field_summary, root_table_schema, span_summary
from .load_code import FRAME_FEATURES
from .options import CardRoot

logger = logging.getLogger(__name__)


def inside_context(roots: Sequence[CardRoot]) -> dict[str, Any]:
    """``{"span_rows", "span_examples", "frame_field_rows"}`` for the template: one span row
    per root with spans, example captions, one row per per-frame field (of the first root
    that has it)."""
    span_rows, examples = [], []
    frame_rows: dict[str, dict[str, str]] = {}
    for root in roots:
        where = f"`{root.path_in_repo or '.'}`"
        try:
            spans = span_summary(root.layout)
        except LayoutError as err:
            logger.warning("the card leaves out the spans of %s: %s", root.layout.uri, err)
            spans = None
        if spans is not None:
            fields = ", ".join(f"`{n}` ({d})" for n, d in spans["fields"].items()) or "none"
            per = spans["frames_per_span"]
            span_rows.append(
                {
                    "root": where,
                    "spans": f"{spans['count']:,}",
                    "videos": f"{spans['videos']:,}",
                    "frames": f"{per['min']:,}–{per['max']:,} (mean {per['mean']:,.1f})",
                    "fields": fields,
                }
            )
            examples += [_md(str(x)) for x in spans["examples"]]
        try:
            summary = frame_field_summary(root.layout, root.storage_options)
        except (LayoutError, OSError) as err:
            logger.warning(
                "the card leaves out the per-frame fields of %s: %s", root.layout.uri, err
            )
            summary = {}
        for name, field in summary.items():
            shape = f"`{tuple(field['shape'])}`" if field["shape"] else "scalar"
            frame_rows.setdefault(
                name,
                {
                    "name": name,
                    "dtype": field["dtype"],
                    "shape": shape,
                    "summary": _md(_values(field)),
                },
            )
    return {
        "span_rows": span_rows,
        "span_examples": examples[:3],
        "frame_field_rows": list(frame_rows.values()),
    }


def frame_row_features(roots: Sequence[CardRoot]) -> list[dict[str, Any]]:
    """The card's ``dataset_info.features`` of a frame row, in the Lance table's column order:
    ``video_id``, ``frame_idx``, ``bytes`` (an image), then each per-frame column as
    ``datasets`` spells it in YAML, so that a plain ``load_dataset("org/repo")`` reads a root
    with per-frame columns too (the first root's columns; roots of one repo share them)."""
    try:
        schema = root_table_schema(roots[0].layout, roots[0].storage_options)
    except (LayoutError, OSError) as err:
        logger.warning("the card declares the frame columns only: %s", err)
        return [dict(f) for f in FRAME_FEATURES]
    base = {f["name"]: dict(f) for f in FRAME_FEATURES}
    features = []
    for field in schema:
        if field.name in base:
            features.append(base[field.name])
            continue
        kind = _yaml_kind(field.type)
        if kind is None:  # a type plain datasets cannot read (a tensor extension): left out
            logger.warning("the card leaves out per-frame column %r (%s)", field.name, field.type)
            continue
        features.append({"name": field.name, **kind})
    return features


_FLOAT_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}


def _yaml_kind(kind: pa.DataType) -> dict[str, Any] | None:
    """How ``datasets`` writes a column of Arrow type ``kind`` in a card's YAML."""
    if pa.types.is_struct(kind):
        children = [(f.name, _yaml_kind(f.type)) for f in kind]
        if any(k is None for _, k in children):
            return None
        return {"struct": [{"name": n, **k} for n, k in children]}  # type: ignore[dict-item]
    if pa.types.is_fixed_size_list(kind):
        inner = _yaml_kind(kind.value_type)
        if inner is None:
            return None
        item = inner["dtype"] if set(inner) == {"dtype"} else inner
        return {"list": item, "length": kind.list_size}
    if pa.types.is_boolean(kind):
        return {"dtype": "bool"}
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return {"dtype": _FLOAT_NAMES.get(str(kind), str(kind))}
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return {"dtype": "string" if pa.types.is_string(kind) else "large_string"}
    return None


def _values(field: dict[str, Any]) -> str:
    if "examples" in field:
        return "e.g. " + ", ".join(repr(x) for x in field["examples"])
    if field["min"] is None:
        return "no values"
    return f"{field['min']:g} to {field['max']:g} (mean {field['mean']:g})"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


__all__ = ["frame_row_features", "inside_context"]
