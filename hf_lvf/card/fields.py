"""The card's "Inside the videos" section: the spans of the roots (count, fields, a few
captions, the load option that reads windows inside them) and their per-frame fields (dtype,
shape, min / mean / max), as the rows the template prints."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..errors import LayoutError
from ..read.describe_fields import frame_field_summary, span_summary
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
            summary = frame_field_summary(root.layout)
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


def _values(field: dict[str, Any]) -> str:
    if "examples" in field:
        return "e.g. " + ", ".join(repr(x) for x in field["examples"])
    if field["min"] is None:
        return "no values"
    return f"{field['min']:g} to {field['max']:g} (mean {field['mean']:g})"


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


__all__ = ["inside_context"]
