"""Statistics of the roots a card describes: counts, durations, sizes, labels, as table rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..layout import FieldKinds, RootLayout
from ..layout.labels import LABEL, combined_label_names
from ..read.samples import plan_root
from .options import CardOptions, CardRoot, rate_text

_SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
)


_PARAM_MEANINGS = {
    "window_length": "frames per sample",
    "frame_skip": "frames skipped between two frames of a sample",
    "hop_size": "frames between the starts of two consecutive samples of a video",
    "min_video_frames": "videos with fewer frames yield no sample",
    "fps": "frames per second the frame counts above are at: each video resampled from its own",
    "frame_size": "`(H, W)` every frame is resized to on decode",
}


def _size_category(count: int) -> str:
    for limit, name in _SIZE_CATEGORIES:
        if count < limit:
            return name
    return "n>1B" if count < 10_000_000_000 else "10B<n<100B"


def _stats(root: CardRoot, options: CardOptions) -> dict[str, Any]:
    if root._stats:
        return root._stats
    layout = root.layout
    num_frames = layout.num_frames
    plan = plan_root(layout, options.params)
    distinct, counts = np.unique(layout.frame_sizes, axis=0, return_counts=True)
    sizes = Counter({(int(h), int(w)): int(c) for (h, w), c in zip(distinct, counts, strict=True)})
    fps = _fps(layout)
    known = ~np.isnan(fps)
    seconds = num_frames[known] / fps[known]
    stats = {
        "num_videos": len(layout),
        "num_frames": int(num_frames.sum()),
        "num_windows": len(plan),
        "windows_per_video": plan.windows_per_video,
        "sizes": sizes,
        "fps": np.unique(fps[known]).tolist(),
        "seconds": float(seconds.sum()),
        "videos_with_fps": int(known.sum()),
        "min_frames": int(num_frames.min()),
        "max_frames": int(num_frames.max()),
    }
    root._stats.update(stats)
    return stats


def _fps(layout: RootLayout) -> np.ndarray:
    """Each video's ``metadata["fps"]`` where it is a positive number, else NaN."""
    if layout.field_kinds.get("fps", FieldKinds(frozenset(), 0)).kinds - {"int", "float"}:
        return np.full(len(layout), np.nan)
    fps = layout.field_column("fps", "float64").to_numpy(zero_copy_only=False)
    return np.where(fps > 0, fps, np.nan)


def _param_rows(options: CardOptions, frame_size: tuple[int, int] | None) -> list[dict[str, str]]:
    p = options.params
    rows = [
        ("window_length", str(p.window_length)),
        ("frame_skip", str(p.frame_skip)),
        ("hop_size", str(p.hop_size)),
        ("min_video_frames", "none" if p.min_video_frames is None else str(p.min_video_frames)),
    ]
    if p.fps is not None:
        rows.append(("fps", rate_text(p.fps)))
    if frame_size is not None:
        rows.append(("frame_size", f"({frame_size[0]}, {frame_size[1]})"))
    return [{"name": n, "value": v, "meaning": _PARAM_MEANINGS[n]} for n, v in rows]


def _feature_rows(
    options: CardOptions,
    fields: Mapping[str, str],
    sizes: Counter,
    frame_size: tuple[int, int] | None,
) -> list[dict[str, str]]:
    length = options.window_length
    if frame_size is not None:
        height, width = frame_size
    else:
        height, width = next(iter(sizes))
    rows = [
        ("video", f"`Array4D(({length}, {height}, {width}, 3), uint8)`", "the frames, RGB"),
        ("video_idx", "`int32`", "index of the video in `_metadata.json`"),
        ("filename", "`string`", "the video's source path (a label)"),
        ("start_frame", "`int32`", "first frame of the window"),
        ("frame_indices", f"`List(int32, length={length})`", "the frame numbers of the window"),
        ("sample_idx", "`int64`", "the sample's index"),
    ]
    if options.fps is not None:
        kind = f"`List(float64, length={length})`"
        rows.append(("timestamps", kind, f"seconds of each frame at {rate_text(options.fps)} fps"))
    for name, dtype in fields.items():
        meaning = "per-video field"
        if name == options.label_field:
            meaning = "the video's label"
        elif name == "fps":
            meaning = "frames per second of the source video"
        elif name == "split":
            meaning = "the video's split"
        rows.append((name, f"`{dtype}`", meaning))
    return [{"name": n, "type": t, "content": c} for n, t, c in rows]


def _stats_header(roots: Sequence[CardRoot]) -> list[str]:
    head = ["root"] if len(roots) > 1 else []
    return [
        *head,
        "videos",
        "frames",
        "frames per video",
        "samples",
        "frame size (H×W)",
        "duration",
    ]


def _stats_rows(
    roots: Sequence[CardRoot], stats: Sequence[Mapping[str, Any]], options: CardOptions
) -> list[list[str]]:
    rows = []
    for root, s in zip(roots, stats, strict=True):
        sizes = ", ".join(
            f"{h}×{w}" + (f" ({_count(n, 'video')})" if len(s["sizes"]) > 1 else "")
            for (h, w), n in sorted(s["sizes"].items(), key=lambda kv: (-kv[1], kv[0]))
        )
        if s["videos_with_fps"] == s["num_videos"]:
            duration = _duration(s["seconds"])
        elif s["videos_with_fps"]:
            duration = (
                f"{_duration(s['seconds'])} ({s['videos_with_fps']} of "
                f"{_count(s['num_videos'], 'video')})"
            )
        else:
            duration = "unknown (no fps)"
        frames_per_video = (
            str(s["min_frames"])
            if s["min_frames"] == s["max_frames"]
            else f"{s['min_frames']:,}–{s['max_frames']:,}"
        )
        row = [
            f"{s['num_videos']:,}",
            f"{s['num_frames']:,}",
            frames_per_video,
            f"{s['num_windows']:,}",
            sizes,
            duration,
        ]
        if len(roots) > 1:
            row.insert(0, f"`{root.path_in_repo or '.'}`")
        rows.append(row)
    return rows


def _fps_note(
    stats: Sequence[Mapping[str, Any]], num_videos: int, seconds: float, with_fps: int
) -> str:
    if not with_fps:
        return (
            "No video records its frame rate (an `fps` field), so durations are unknown; the "
            "dataset counts frames."
        )
    rates = sorted({f for s in stats for f in s["fps"]})
    shown = ", ".join(f"{r:g}" for r in rates[:5]) + (", ..." if len(rates) > 5 else "")
    where = (
        "every video" if with_fps == num_videos else f"{with_fps} of {_count(num_videos, 'video')}"
    )
    return f"Durations use the `fps` recorded for {where} ({shown} fps)."


def _label_table(roots: Sequence[CardRoot], label_field: str) -> tuple[list[str], list[list[str]]]:
    counts: dict[str, Counter] = {}
    seen_label = False
    for root in roots:
        layout = root.layout
        n = len(layout)
        split = layout.field_raw("split")
        split = pc.cast(split, pa.string()) if split is not None else pa.nulls(n, pa.string())
        split = pc.fill_null(split, "")
        split = pc.if_else(pc.equal(split, ""), root.split, split)
        label = layout.field_raw(label_field)
        label = label if label is not None else pa.nulls(n, pa.string())
        seen_label = seen_label or label.null_count < n
        pairs = pa.table({"split": split, "label": label}).group_by(["split", "label"])
        for row in pairs.aggregate([([], "count_all")]).to_pylist():
            counts.setdefault(row["split"], Counter())[row["label"]] += row["count_all"]
    if not seen_label:
        return [], []
    splits = sorted(counts, key=_split_order)
    labels = sorted({lab for c in counts.values() for lab in c}, key=_label_order)
    names = combined_label_names(r.layout for r in roots) if label_field == LABEL else None
    header = [f"`{label_field}`", *splits]
    if len(splits) > 1:
        header.append("total")
    rows = []
    for label in labels:
        row = ["*(none)*" if label is None else _md(str(label))]
        if names is not None and isinstance(label, int) and 0 <= label < len(names):
            row[0] = f"{_md(names[label])} ({label})"  # the ClassLabel's name, then its value
        row += [f"{counts[s][label]:,}" for s in splits]
        if len(splits) > 1:
            row.append(f"{sum(counts[s][label] for s in splits):,}")
        rows.append(row)
    total = ["**total**", *(f"{sum(counts[s].values()):,}" for s in splits)]
    if len(splits) > 1:
        total.append(f"{sum(sum(c.values()) for c in counts.values()):,}")
    rows.append(total)
    return header, rows


def _split_order(name: str) -> tuple[int, str]:
    order = {"train": 0, "validation": 1, "valid": 1, "val": 1, "dev": 1, "test": 2}
    return order.get(name, 3), name


def _label_order(label: Any) -> tuple[int, Any]:
    if label is None:
        return 2, ""
    if isinstance(label, (int, float)) and not isinstance(label, bool):
        return 0, label
    return 1, str(label)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _common(values: Any) -> Any:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or heading."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _count(n: int, word: str) -> str:
    """``"1 video"``, ``"2 videos"``, ``"1,000 frames"``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
