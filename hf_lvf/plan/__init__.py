"""The plan: pure numpy from window parameters to which frames make which sample.

Offers the layers above :class:`WindowParams` and the segment plan (:mod:`.segment_plan`),
frame sizes, crops and memory bounds (:mod:`.sizes`), virtual frames for ``fps=`` and padded
short videos (:mod:`.timeline`), and clips per video per epoch with their shards
(:mod:`.clips`). Knows nothing of files: it may import only :mod:`hf_lvf.errors`.
"""

from .segment_plan import SegmentPlan, WindowParams, check_frame_size, check_integer, plan_windows

__all__ = ["SegmentPlan", "WindowParams", "check_frame_size", "check_integer", "plan_windows"]
