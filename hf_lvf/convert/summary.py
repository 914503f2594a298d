"""What a conversion reports: its :class:`ConversionSummary` and the inputs it skipped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SkippedVideo:
    """An input that could not be converted.

    Attributes:
        path: the input's ``path`` (as it would have been recorded).
        reason: why, in words (the decoder's message for a corrupt file).
    """

    path: str
    reason: str


@dataclass(frozen=True)
class ConversionSummary:
    """What :func:`convert_videos` wrote.

    Attributes:
        root: the root written (its URL on an object store).
        num_videos: videos written (for an append, the new ones).
        num_frames: frames written (their Lance rows).
        skipped: inputs not converted, by path: unreadable ones, and (append) files
            already in the root.
        seconds: wall time of the conversion.
        splits: when the inputs give splits, each split's summary, its root
            ``root/<split>`` (``root`` is then their folder); else empty.
    """

    root: Path | str
    num_videos: int
    num_frames: int
    skipped: tuple[SkippedVideo, ...] = ()
    seconds: float = 0.0
    splits: Mapping[str, ConversionSummary] = field(default_factory=dict)

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    @property
    def frames_per_second(self) -> float:
        """Frames converted per second of wall time."""
        return self.num_frames / self.seconds if self.seconds > 0 else float("nan")
