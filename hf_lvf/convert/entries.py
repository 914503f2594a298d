"""The video entries of ``_metadata.json`` for the results of a conversion's tasks."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..errors import ParameterError
from ..frames import FRAME_SCHEMA
from ..layout import VideoInfo
from ..write.videos import clean_spans, span_field_kinds
from .pool import _Result
from .sources import _Source

logger = logging.getLogger(__name__)


def _entries(
    converted: list[_Result], source_of: Mapping[int, _Source], start_row: int
) -> list[dict[str, Any]]:
    entries = []
    for result in converted:
        source = source_of[result.video_id]
        entries.append(
            VideoInfo(
                video_idx=len(entries),
                id=result.video_id,
                key=source.key,
                path=source.path,
                checksum=result.checksum,
                num_frames=result.num_frames,
                height=result.height,
                width=result.width,
                start_row=start_row,
                # "fps" is the rate of the stored frames (the target fps, or the source's
                # average rate): samples carry it, and frame_idx / fps is a time in seconds.
                metadata={**source.metadata, "fps": result.fps},
                # Extra entry fields (FORMAT.md keeps unknown fields): provenance.
                extra={"source_fps": result.source_fps, "codec": result.codec}
                | ({} if result.psnr is None else {"psnr": result.psnr})
                | _spans(source, result),
            ).to_json()
        )
        start_row += result.num_frames
    return entries


def _spans(source: _Source, result: _Result) -> dict[str, Any]:
    """``{"spans": [...]}``: the source's spans in seconds as frames ``[start, end)`` of the
    stored video, ``round(seconds * fps)``, clipped to its frames; spans left empty by the
    clipping are dropped (logged).

    A single span that ends past the video's end is the span the video was cut from (what
    video2dataset's clipping records in each clip's ``clips``, its timestamps reset to 0):
    it is counted from the video's start."""
    if not source.spans:
        return {}
    fps = result.fps or 0.0
    offset = 0.0
    (first, *others) = source.spans
    if not others and fps and float(first["end"]) > (result.num_frames + 1) / fps:
        offset = float(first["start"])  # the video is this clip of a longer one
    spans = []
    for span in source.spans:
        start = max(0, round((float(span["start"]) - offset) * fps))
        end = min(result.num_frames, round((float(span["end"]) - offset) * fps))
        if end <= start:
            logger.info("video %r: span %r holds no stored frame; dropped", source.path, span)
            continue
        fields = {k: v for k, v in span.items() if k not in ("start", "end")}
        spans.append({"start_frame": start, "end_frame": end, **fields})
    # FORMAT.md's rules (bounds, scalar fields, the same fields in every span), named.
    return {"spans": clean_spans(source.key, spans, result.num_frames)} if spans else {}


def check_joins(target: Any, converted: list[_Result], entries: list[dict[str, Any]]) -> None:
    """Raise ValueError (the root untouched) if the converted videos' per-frame columns or
    span fields differ from those of the root appended to."""
    fields = span_field_kinds(s for e in entries for s in e.get("spans") or ())
    schema = converted[0].schema or FRAME_SCHEMA
    target.check_agrees(schema, fields, what="the converted videos")


def check_field_schemas(converted: list[_Result], source_of: Mapping[int, _Source]) -> None:
    """Every video of a root carries the same per-frame columns.

    Raises:
        ValueError: two videos' per-frame values differ in names, dtypes or shapes (before
            anything is committed), naming both.
    """
    first = converted[0]
    for result in converted[1:]:
        if result.field_schema != first.field_schema:
            raise ParameterError(
                f"video {source_of[result.video_id].path!r} has per-frame fields "
                f"[{result.field_schema or 'none'}] but {source_of[first.video_id].path!r} has "
                f"[{first.field_schema or 'none'}]: every video of a root needs the same ones"
            )
