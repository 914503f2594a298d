"""Numbers in words for ``hf-lvf info`` (:func:`hf_lvf.read.describe.format_description`):
"1 video", "132 frames a video", one value where a range's ends are equal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def count_of(n: int, noun: str) -> str:
    """``"1 video"``, ``"1,200 videos"``."""
    return f"{n:,} {noun}{'s' * (n != 1)}"


def value_range(low: Any, high: Any, show: Any) -> str:
    """``"low to high"``, or one value when they are equal."""
    return show(low) if low == high else f"{show(low)} to {show(high)}"


def frames_a_video(per: Mapping[str, Any]) -> str:
    """``"132 frames a video"``, or the range and mean where lengths differ."""
    if per["min"] == per["max"]:
        return f"{per['min']:,} frames a video"
    return f"{per['min']:,} to {per['max']:,} a video, mean {per['mean']:,.1f}"


__all__ = ["count_of", "frames_a_video", "value_range"]
