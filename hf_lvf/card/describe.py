"""``hf_lvf.describe``: what a root holds, from its metadata, as a plain dict (and as a table).

Everything is computed from ``_metadata.json`` (columns of the video table, in numpy, no
loop over videos) and from the Lance manifest (the version read, rows, data file sizes);
no frame is read, so a root of a million videos is described in about the time it takes to
open it. What a read would refuse (a Lance table that does not match the video table,
videos of several sizes without ``frame_size``, no window for the parameters) is listed
under ``problems`` instead of raised: a description should show everything at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import LayoutError, ParameterError
from ..frames import FrameField, FrameReader, field_values, frame_fields
from ..layout import MISSING_VALUES, RootLayout, read_layout
from ..layout.image_streams import root_streams, stream_names
from ..layout.spans import layout_spans
from ..location import pin_root, root_size_bytes
from ..plan import (
    DEFAULT_MAX_FRAME_PIXELS,
    MIXED_SIZES_HINT,
    WEBP_MAX_SIDE,
    WindowParams,
    plan_windows,
)
from ..read.samples import plan_root_spans

# ================================================================================================
# Numbers in words for ``hf-lvf info`` (:func:`hf_lvf.card.describe.format_description`):
# "1 video", "132 frames a video", one value where a range's ends are equal.
# ================================================================================================


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


# ================================================================================================
# The parts of :func:`hf_lvf.describe` about what changes inside a video: the spans of
# ``_metadata.json`` (count, fields, a few captions) and the per-frame fields of the Lance
# table (dtype, shape, min / mean / max), as dicts and as rows of ``hf-lvf info``'s table.
# ================================================================================================


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


# ================================================================================================
# ``hf_lvf.describe``: what a root holds, from its metadata, as a plain dict (and as a table).
#
# Everything is computed from ``_metadata.json`` (columns of the video table, in numpy, no
# loop over videos) and from the Lance manifest (the version read, rows, data file sizes);
# no frame is read, so a root of a million videos is described in about the time it takes to
# open it. What a read would refuse (a Lance table that does not match the video table,
# videos of several sizes without ``frame_size``, no window for the parameters) is listed
# under ``problems`` instead of raised: a description should show everything at once.
# ================================================================================================


# Distinct values listed per metadata field (and frame sizes, frame rates), most frequent first.
_MAX_LISTED = 20


def describe(
    root: str | os.PathLike[str],
    *,
    window_length: int = 1,
    frame_skip: int = 0,
    hop_size: int = 1,
    min_video_frames: int | None = None,
    windows_in: Literal["videos", "spans"] = "videos",
    storage_options: Mapping[str, str] | None = None,
    revision: str | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Describe a root: videos, frames, sizes, frame rates, metadata fields, windows, bytes.

    Args:
        root: a local folder, ``hf://datasets/org/repo[/sub]`` or an object-store URL.
        window_length, frame_skip, hop_size, min_video_frames: the window parameters of
            :class:`~hf_lvf.VideoWindows`; ``windows`` counts the windows they give.
        windows_in: ``"spans"`` counts the windows inside the videos' spans.
        storage_options: for reading the root (object-store credentials and such).
        revision, token: for ``hf://`` roots, as for :class:`~hf_lvf.VideoWindows`.

    Returns:
        A dict that ``json.dumps`` takes:

        - ``root`` (and ``revision``, the commit sha, for ``hf://``), ``videos``, ``frames``;
        - ``frames_per_video``: ``{"min", "mean", "max"}``;
        - ``frame_sizes``: ``[{"height", "width", "videos", "frames"}]``, most videos first;
        - ``fps``: ``[{"fps", "videos"}]`` of the videos whose frame rate is recorded (entry
            ``fps`` or ``metadata["fps"]``); ``duration``: ``{"seconds", "videos", "min_seconds",
            "max_seconds"}`` of those videos, ``None`` when no video has one;
        - ``window_params``, ``windows``, ``videos_with_windows``;
        - ``bytes``: ``{"per_frame_mean"`` (encoded bytes per frame: the Lance data files
            over the frames), ``"data"`` (those files), ``"on_disk"`` (every file of the root)``}``,
            each ``None`` when unknown;
        - ``fields``: per metadata field ``{"dtype", "values": [{"value", "videos"}] (most
            frequent first, at most 20; with ``"name"`` from ``label_names`` for ``label``),
            "distinct"}`` (``min``/``mean``/``max`` and ``missing`` for float fields; a video
            that lacks an int or string field counts under its placeholder, -1 or ``""``);
        - ``spans``: ``{"count", "videos", "frames_per_span", "fields", "examples_field",
            "examples"}`` (a few captions), ``None`` when no video has spans;
        - ``frame_fields``: per per-frame field (Lance columns beside ``bytes``) ``{"dtype",
            "shape", "min", "mean", "max"}`` (``"examples"`` for strings): one scan of them;
        - ``encoding``, ``quality``, ``lossless``, ``fidelity`` (``{"psnr_mean",
            "psnr_min", "frames_measured", "videos_measured"}`` as a conversion measured it,
            or ``None``), ``resize``, ``crop``, ``skipped`` (inputs a conversion skipped),
            ``lance_version`` (the version read), ``lance_fragments``;
        - ``lineage``: where the videos came from, as the converter recorded it (``source``,
            ``source_format``, ``source_revision``, ...), or ``None``;
        - ``streams``: per image stream ``{"proxy_of", "encoding", "max_frame_size"}``:
            ``proxy_of`` is ``None`` for a sample key (a camera); for a proxy,
            ``max_frame_size`` ``[H, W]`` is the largest ``frame_size`` it serves (reads at a
            ``frame_size`` within it decode the proxy, not ``bytes``); ``{}`` without streams;
        - ``problems``: what a read would refuse or find, in words (empty when none).

    Raises:
        RootNotFoundError, LayoutError: no ``_metadata.json``, or one that is malformed.
        HubError: the repo or revision of an ``hf://`` root is missing or not accessible.
        ValueError: a window parameter is out of range.

    Examples:
        >>> hf_lvf.describe("clips/", window_length=16)["windows"]  # doctest: +SKIP
        1140
    """
    params = WindowParams(
        window_length=window_length,
        frame_skip=frame_skip,
        hop_size=hop_size,
        min_video_frames=min_video_frames,
        windows_in=windows_in,
    )
    uri = os.fspath(root)
    pinned_sha = None
    if uri.startswith("hf://"):
        pinned = pin_root(uri, revision=revision, token=token, storage_options=storage_options)
        uri, storage_options, pinned_sha = pinned.uri, pinned.storage_options, pinned.sha
    elif revision is not None or token is not None:
        raise ParameterError(f"revision= and token= apply to hf:// roots only, got root {uri!r}")
    layout = read_layout(uri, storage_options=storage_options)
    header = layout.header
    problems: list[str] = []
    num_frames = layout.num_frames
    sizes = layout.frame_sizes
    spans_plan = windows_in == "spans"
    plan = plan_root_spans(layout, params) if spans_plan else plan_windows(num_frames, params)
    with_windows = plan.windows_per_video > 0

    try:
        facts = table_facts(layout, storage_options)
    except (LayoutError, OSError) as err:  # HubError is an OSError
        facts = None
        problems.append(f"the Lance table cannot be read: {err}")
    if not with_windows.any():
        problems.append(
            f"no window: every video has fewer than max(span={params.span}, "
            f"min_video_frames={params.min_video_frames}) frames (longest: "
            f"{int(num_frames.max())}); VideoWindows and load_dataset would refuse the root"
        )
    window_sizes = np.unique(sizes[with_windows], axis=0)
    if len(window_sizes) > 1:
        shown = ", ".join(f"{h}x{w}" for h, w in window_sizes[:5].tolist())
        more = ", ..." if len(window_sizes) > 5 else ""
        problems.append(
            f"the videos that yield windows differ in size ({shown}{more}, HxW), so "
            f"VideoWindows and load_dataset need frame_size=: {MIXED_SIZES_HINT}"
        )
    too_big = np.flatnonzero(sizes.prod(axis=1) > DEFAULT_MAX_FRAME_PIXELS)
    if too_big.size:
        problems.append(
            f"{too_big.size} videos declare frames above the default max_frame_pixels="
            f"{DEFAULT_MAX_FRAME_PIXELS:,} (videos[{int(too_big[0])}]: "
            f"{int(sizes[too_big[0], 0])}x{int(sizes[too_big[0], 1])}); pass a larger one"
        )
    fields, field_problem = _fields(layout, header.get("label_names"))
    if field_problem:
        problems.append(field_problem)

    total_frames = int(num_frames.sum())
    data_bytes = facts.data_bytes if facts is not None else None
    described = {
        "root": uri,
        **({"revision": pinned_sha} if pinned_sha else {}),
        "videos": len(layout),
        "frames": total_frames,
        "frames_per_video": {
            "min": int(num_frames.min()),
            "mean": float(num_frames.mean()),
            "max": int(num_frames.max()),
        },
        "frame_sizes": _frame_sizes(sizes, num_frames),
        **_rates(layout.video_fps, num_frames),
        "window_params": {
            "window_length": params.window_length,
            "frame_skip": params.frame_skip,
            "hop_size": params.hop_size,
            "min_video_frames": params.min_video_frames,
            **({"windows_in": "spans"} if spans_plan else {}),
        },
        "windows": len(plan),
        "videos_with_windows": int(with_windows.sum()),
        "bytes": {
            "per_frame_mean": data_bytes / total_frames if data_bytes and total_frames else None,
            "data": data_bytes,
            "on_disk": root_size_bytes(uri, storage_options),
        },
        "fields": fields,
        **described_extras(layout, storage_options, problems),
        "encoding": header.get("encoding"),
        "quality": header.get("quality"),
        "lossless": header.get("lossless"),
        "fidelity": header.get("fidelity"),
        "resize": header.get("resize"),
        "crop": header.get("crop"),
        "skipped": header.get("n_skipped"),
        "lance_version": facts.version if facts is not None else header.get("lance_version"),
        "lance_fragments": facts.num_fragments if facts is not None else None,
        "lineage": header.get("lineage"),
        "streams": _streams(layout, with_windows),
        "problems": problems,
    }
    return described


def _streams(layout: RootLayout, videos: np.ndarray) -> dict[str, dict[str, Any]]:
    """``describe``'s ``streams``: each stream's kind, encoding and, over the videos that
    give windows, the largest frame size every one of them covers."""
    declared = layout.header.get("streams") or {}
    found = {}
    for name, stream in root_streams(layout).items():
        sizes = stream.sizes[videos] if videos.any() else stream.sizes
        found[name] = {
            "proxy_of": stream.proxy_of,
            "encoding": declared[name].get("encoding"),
            "max_frame_size": [int(sizes[:, 0].min()), int(sizes[:, 1].min())],
        }
    return found


_SOURCE_FORMATS = {
    "lerobot": "LeRobot dataset",
    "webdataset": "webdataset shards",
    "datasets": "datasets dataset",
    "videofolder": "videofolder repo",
}


def source_text(lineage: Any) -> str | None:
    """Where an imported root's videos came from, in words (``None`` if not recorded)."""
    if not isinstance(lineage, Mapping) or "source_format" not in lineage:
        return None
    kind = _SOURCE_FORMATS.get(str(lineage["source_format"]), str(lineage["source_format"]))
    source = lineage.get("source")
    text = kind + (
        f" {', '.join(map(str, source)) if isinstance(source, list) else source}" if source else ""
    )
    revision = lineage.get("source_revision")
    if isinstance(revision, str):
        text += f" at revision {revision}"
    if lineage.get("camera"):
        text += f" (camera {lineage['camera']})"
    return text


def fidelity_text(fidelity: Any) -> str | None:
    """``_metadata.json``'s ``fidelity`` in words, ``None`` where it is not recorded."""
    if not isinstance(fidelity, dict) or fidelity.get("psnr_mean") is None:
        return None
    text = (
        f"PSNR {fidelity['psnr_mean']:.1f} dB mean, {fidelity['psnr_min']:.1f} dB worst video "
        f"({fidelity.get('frames_measured', '?')} frames measured against the source)"
    )
    return text + ("; 100 dB: identical" if fidelity["psnr_min"] >= 100 else "")


def _frame_sizes(sizes: np.ndarray, num_frames: np.ndarray) -> list[dict[str, int]]:
    codes = sizes[:, 0] * (WEBP_MAX_SIDE + 1) + sizes[:, 1]  # one int per (H, W): a 1-D unique
    distinct, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    frames = np.bincount(inverse.reshape(-1), weights=num_frames, minlength=len(distinct))
    order = np.argsort(-counts, kind="stable")
    heights, widths = np.divmod(distinct[order], WEBP_MAX_SIDE + 1)
    return [
        {"height": int(h), "width": int(w), "videos": int(n), "frames": int(f)}
        for h, w, n, f in zip(
            heights.tolist(),
            widths.tolist(),
            counts[order].tolist(),
            frames[order].tolist(),
            strict=True,
        )
    ]


def _rates(fps: np.ndarray, num_frames: np.ndarray) -> dict[str, Any]:
    known = np.isfinite(fps) & (fps > 0)
    if not known.any():
        return {"fps": [], "duration": None}
    rates, counts = np.unique(fps[known], return_counts=True)
    order = np.argsort(-counts, kind="stable")[:_MAX_LISTED]
    seconds = num_frames[known] / fps[known]
    return {
        "fps": [
            {"fps": float(r), "videos": int(n)}
            for r, n in zip(rates[order].tolist(), counts[order].tolist(), strict=True)
        ],
        "duration": {
            "seconds": float(seconds.sum()),
            "videos": int(known.sum()),
            "min_seconds": float(seconds.min()),
            "max_seconds": float(seconds.max()),
        },
    }


def _fields(layout: Any, label_names: Any) -> tuple[dict[str, Any], str | None]:
    try:
        dtypes = layout.fields
    except ValueError as err:  # a field mixes value types: reads refuse the root too
        return {}, f"the metadata fields cannot be typed: {err}"
    names = label_names if isinstance(label_names, list) else None
    return {
        name: _field(layout.field_column(name, dtype), dtype, names if name == "label" else None)
        for name, dtype in dtypes.items()
    }, None


def _field(column: pa.Array, dtype: str, label_names: list | None) -> dict[str, Any]:
    summary: dict[str, Any] = {"dtype": dtype}
    if dtype == "float64":
        values = column.to_numpy(zero_copy_only=False)
        present = values[~np.isnan(values)]
        summary["missing"] = int(values.size - present.size)
        for key, reduce in (("min", np.min), ("mean", np.mean), ("max", np.max)):
            summary[key] = float(reduce(present)) if present.size else None
        return summary
    counted = pc.value_counts(column)  # hashed: no sort of a million values
    values, counts = counted.field("values"), counted.field("counts").to_numpy()
    by_count = [("counts", "descending"), ("values", "ascending")]  # ties: in value order
    order = pc.sort_indices(pa.table({"counts": counts, "values": values}), sort_keys=by_count)
    order = order.to_numpy()[:_MAX_LISTED]
    listed = []
    for value, count in zip(values.take(order).to_pylist(), counts[order].tolist(), strict=True):
        item: dict[str, Any] = {"value": value, "videos": int(count)}
        if label_names is not None and isinstance(value, int) and 0 <= value < len(label_names):
            item["name"] = label_names[value]
        listed.append(item)
    summary["values"] = listed
    summary["distinct"] = len(counts)
    if dtype in MISSING_VALUES:
        summary["placeholder"] = MISSING_VALUES[dtype]
    if label_names is not None:
        summary["label_names"] = list(label_names)
    return summary


def format_description(described: Mapping[str, Any]) -> str:
    """The dict of :func:`describe` as an aligned two-column table (what ``hf-lvf info``
    prints)."""
    d = described
    rows: list[tuple[str, str]] = [("root", d["root"])]
    if d.get("revision"):
        rows.append(("revision", d["revision"]))
    per = d["frames_per_video"]
    rows += [
        ("videos", f"{d['videos']:,}"),
        ("frames", f"{d['frames']:,} ({frames_a_video(per)})"),
        (
            "frame sizes (HxW)",
            _listed((f"{s['height']}x{s['width']}", s["videos"]) for s in d["frame_sizes"]),
        ),
    ]
    if d["fps"]:
        rows.append(("fps", _listed((f"{r['fps']:g}", r["videos"]) for r in d["fps"])))
        duration = d["duration"]
        rows.append(
            (
                "duration",
                f"{_seconds(duration['seconds'])} ({count_of(duration['videos'], 'video')} with an "
                f"fps; {value_range(duration['min_seconds'], duration['max_seconds'], _seconds)} "
                "a video)",
            )
        )
    else:
        rows.append(("fps", "not recorded"))
    p = d["window_params"]
    params = ", ".join(f"{k}={v}" for k, v in p.items() if v is not None)
    rows.append(
        (
            "windows",
            f"{d['windows']:,} ({params}; from {count_of(d['videos_with_windows'], 'video')})",
        )
    )
    size = d["bytes"]
    mean = size["per_frame_mean"]
    rows.append(("bytes per frame", "unknown" if mean is None else f"{mean:,.0f} (mean, encoded)"))
    rows.append(("size on disk", "unknown" if size["on_disk"] is None else _size(size["on_disk"])))
    encoding = d["encoding"] or "webp (not recorded)"
    if d["lossless"]:
        encoding += ", lossless"
    elif d["quality"] is not None:
        encoding += f", quality {d['quality']}"
    for key in ("resize", "crop"):
        if d[key] not in (None, "none"):
            encoding += f", {key} {d[key]}"
    rows.append(("encoding", encoding))
    rows.append(("fidelity", fidelity_text(d["fidelity"]) or "not measured"))
    source = source_text(d.get("lineage"))
    if source:
        rows.append(("source", source))
    if d["skipped"]:
        rows.append(("skipped inputs", f"{d['skipped']:,}"))
    rows.append(
        ("lance version", "unknown" if d["lance_version"] is None else str(d["lance_version"]))
    )
    for name, stream in d.get("streams", {}).items():
        height, width = stream["max_frame_size"]
        kind = "camera (a sample key)"
        if stream["proxy_of"]:
            kind = f"proxy of {stream['proxy_of']}: serves reads at frame_size <= {height}x{width}"
        rows.append((f"stream {name}", f"{kind}, {stream['encoding'] or 'encoding not recorded'}"))
    for name, field in d["fields"].items():
        rows.append((f"field {name}", _field_text(field)))
    rows += description_rows(d)
    rows += [("problem", text) for text in d["problems"]] or [("problems", "none")]
    width = max(len(key) for key, _ in rows)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in rows)


def _field_text(field: Mapping[str, Any]) -> str:
    if field["dtype"] == "float64":
        if field["min"] is None:
            return "float64, no values"
        text = f"float64, {value_range(field['min'], field['max'], lambda v: f'{v:g}')}"
        text += f" (mean {field['mean']:g})" if field["min"] != field["max"] else ""
        missing = field["missing"]
        return text + (f", missing in {count_of(missing, 'video')}" if missing else "")
    shown = _listed(
        (
            f"{item['value']!r}" + (f" ({item['name']})" if "name" in item else ""),
            item["videos"],
        )
        for item in field["values"]
    )
    more = field["distinct"] - len(field["values"])
    return f"{field['dtype']}, " + shown + (f", {more:,} more values" if more > 0 else "")


def _listed(items: Any) -> str:
    return ", ".join(f"{label}: {count:,} video{'s' * (count != 1)}" for label, count in items)


def _seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    hours, rest = divmod(seconds, 3600)
    return f"{int(hours)} h {rest / 60:.0f} min" if hours else f"{seconds / 60:.1f} min"


def _size(num_bytes: int) -> str:
    value, unit = float(num_bytes), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit} ({num_bytes:,} bytes)" if unit != "bytes" else f"{num_bytes} bytes"


# ================================================================================================
# What the frame table says about itself, from its manifest (the version read, its rows, the
# bytes of its data files; no frame is read), and what its per-frame fields hold (one scan of
# their Lance columns, never of ``bytes``, reduced a batch at a time to min / mean / max).
# ================================================================================================
_ROWS_PER_BATCH = 1 << 16
_EXAMPLES = 3


@dataclass(frozen=True)
class TableFacts:
    """Attributes:
    version: the Lance version opened (the one ``_metadata.json`` names, else the latest).
    num_rows: rows of that version.
    num_fragments: its fragments (Lance data files, one or more each).
    data_bytes: bytes of its data files, as the manifest records them (``None`` if a file
        written by an older Lance has no recorded size).
    """

    version: int
    num_rows: int
    num_fragments: int
    data_bytes: int | None


def table_facts(layout: RootLayout, storage_options: Mapping[str, str] | None = None) -> TableFacts:
    """Open the Lance table of ``layout``'s root as a read would (the same checks) and return
    what its manifest says.

    Raises:
        LayoutError: the table is missing, has another schema, or its row count is not the
            video table's (the checks of the first read).
        HubError, OSError: a remote table could not be read (after the retries of a read).
    """
    dataset = FrameReader(layout, storage_options).dataset
    fragments = dataset.get_fragments()
    sizes = [f.file_size_bytes for fragment in fragments for f in fragment.metadata.files]
    return TableFacts(
        version=int(dataset.version),
        num_rows=int(dataset.count_rows()),
        num_fragments=len(fragments),
        data_bytes=None if not all(sizes) else int(sum(sizes)),  # 0/None: not recorded
    )


@dataclass(frozen=True)
class FieldStats:
    """Attributes:
    field: the field (dotted name, dtype, one frame's shape).
    min, mean, max: over every element of every frame (numeric and bool fields; ``None``
        for strings or an empty table).
    examples: the first few distinct values of a string field.
    """

    field: FrameField
    min: float | None = None
    mean: float | None = None
    max: float | None = None
    examples: tuple[str, ...] = ()


def frame_field_stats(
    layout: RootLayout, storage_options: Mapping[str, str] | None = None
) -> dict[str, FieldStats]:
    """Each per-frame field of ``layout``'s root, by dotted name, with its statistics.

    Raises:
        LayoutError: the table cannot be opened, or has a column of an unsupported type.
        HubError, OSError: a remote table could not be read.
    """
    dataset = FrameReader(layout, storage_options).dataset
    fields = frame_fields(dataset.schema, where=layout.uri, streams=stream_names(layout.header))
    if not fields:
        return {}
    top = list(dict.fromkeys(f.column[0] for f in fields.values()))
    low = {n: np.inf for n in fields}
    high = {n: -np.inf for n in fields}
    total = dict.fromkeys(fields, 0.0)
    count = dict.fromkeys(fields, 0)
    examples: dict[str, list[str]] = {n: [] for n in fields}
    for batch in dataset.to_batches(columns=top, batch_size=_ROWS_PER_BATCH):
        for name, field in fields.items():
            values = field_values(_column(batch, field.column), field)
            if field.is_string:
                seen = examples[name]
                seen.extend(v for v in dict.fromkeys(values) if v not in seen)
                del seen[_EXAMPLES:]
                continue
            numbers = np.asarray(values, np.float64).reshape(-1)
            if numbers.size:
                low[name] = min(low[name], float(numbers.min()))
                high[name] = max(high[name], float(numbers.max()))
                total[name] += float(numbers.sum())
                count[name] += numbers.size
    return {
        name: _stats(field, low, high, total, count, examples) for name, field in fields.items()
    }


def _column(batch: pa.RecordBatch, path: tuple[str, ...]) -> pa.Array:
    """The column at ``path`` (a struct's child: ``("observation", "state")``) of ``batch``."""
    column = batch.column(path[0])
    for child in path[1:]:
        column = column.field(child)
    return column


def _stats(field: FrameField, low, high, total, count, examples) -> FieldStats:  # noqa: ANN001
    name = field.name
    if field.is_string:
        return FieldStats(field, examples=tuple(examples[name]))
    if not count[name]:
        return FieldStats(field)
    return FieldStats(field, low[name], total[name] / count[name], high[name])


def root_table_schema(
    layout: RootLayout, storage_options: Mapping[str, str] | None = None
) -> pa.Schema:
    """The Arrow schema of ``layout``'s Lance table (the version it describes)."""
    return FrameReader(layout, storage_options).dataset.schema


__all__ = [
    "count_of",
    "frames_a_video",
    "value_range",
    "described_extras",
    "description_rows",
    "frame_field_summary",
    "frame_field_text",
    "span_summary",
]
