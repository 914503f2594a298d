"""The video entries of ``_metadata.json`` for the results of a conversion's tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..layout import VideoInfo
from .pool import _Result
from .sources import _Source


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
                | ({} if result.psnr is None else {"psnr": result.psnr}),
            ).to_json()
        )
        start_row += result.num_frames
    return entries
