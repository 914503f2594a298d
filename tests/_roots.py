"""Roots and a reference oracle for the core tests.

Two ways to build a root: :func:`hf_root` (hf_lvf's own writer) and
:func:`write_foreign_root`, which plays "another tool": raw ``lance.write_dataset``,
Pillow WebP and a hand-built ``_metadata.json`` holding only what FORMAT.md
requires, plus unknown fields, spread over several Lance files.

:func:`oracle_sample` reads a window the slow, literal way FORMAT.md describes
(one ``take`` per frame, Pillow decode, a dict built by hand). It shares no code
with hf_lvf on purpose, so a bug in the package cannot hide in both.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from PIL import Image

FRAME_SIZE = (32, 48)  # (H, W): small, not square, so H/W mix-ups show
SAMPLE_KEYS = ["video", "video_idx", "filename", "start_frame", "frame_indices", "sample_idx"]


# --- frames -------------------------------------------------------------------


def make_frames(num_frames: int, height: int, width: int, *, seed: int) -> list[np.ndarray]:
    """Deterministic smooth frames (compress like footage), each different from the next."""
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.int64)
    base = rng.integers(0, 256, size=3)
    frames = []
    for t in range(num_frames):
        frame = np.stack(
            [(ys * 4 + base[0] + 9 * t), (xs * 3 + base[1] + 5 * t), (ys + xs + base[2] - 7 * t)],
            axis=-1,
        )
        frames.append((frame % 256).astype(np.uint8))
    return frames


def webp(frame: np.ndarray, *, quality: int = 80, lossless: bool = False) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame, "RGB").save(buf, format="WEBP", quality=quality, lossless=lossless)
    return buf.getvalue()


def png(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame, "RGB").save(buf, format="PNG")
    return buf.getvalue()


# --- roots ----------------------------------------------------------------------


def hf_root(
    path: Path,
    lengths: Sequence[int] = (12, 3, 20, 9),
    *,
    frame_size: tuple[int, int] = FRAME_SIZE,
    metadata: Callable[[int], dict[str, Any]] | None = None,
    overwrite: bool = False,
) -> Path:
    """A root written by ``hf_lvf.write.write_frames``; video ``i`` is ``clip_{i}`` with ``i``
    frames."""
    from hf_lvf.write import write_frames

    height, width = frame_size
    metadata = metadata or (lambda i: {"label": i % 3, "split": "train" if i % 2 else "val"})
    videos = (
        (f"clip_{i}", iter(make_frames(n, height, width, seed=i)), metadata(i))
        for i, n in enumerate(lengths)
    )
    return write_frames(path, videos, overwrite=overwrite)


def write_foreign_root(
    root: Path,
    videos: Sequence[dict[str, Any]],
    *,
    max_rows_per_file: int = 7,
    blobs: dict[tuple[int, int], bytes | None] | None = None,
    top_level_extra: dict[str, Any] | None = None,
) -> Path:
    """Write a root the way another tool might, following FORMAT.md only.

    Args:
        root: folder to create.
        videos: per video ``{"frames": [...], "path": str}`` plus optional
            ``"metadata"`` and any other fields (copied into the entry as they are).
        max_rows_per_file: small, so the Lance table spans several files.
        blobs: ``{(video, frame): bytes}`` stored instead of the encoded frame
            (corrupt or non-WebP frames for error tests).
        top_level_extra: extra top-level fields of ``_metadata.json``.
    """
    import lance

    blobs = blobs or {}
    video_ids, frame_ids, data, entries = [], [], [], []
    start_row = 0
    for v, video in enumerate(videos):
        frames = video["frames"]
        height, width = frames[0].shape[:2]
        for f, frame in enumerate(frames):
            video_ids.append(v)
            frame_ids.append(f)
            # Mix lossy and lossless WebP, as files from different tools would.
            data.append(blobs.get((v, f), webp(frame, lossless=(v + f) % 5 == 0)))
        entry = {"T": len(frames), "H": height, "W": width, "start_row": start_row}
        entry.update({k: val for k, val in video.items() if k != "frames"})
        entries.append(entry)
        start_row += len(frames)
    table = pa.table(
        {
            "video_id": pa.array(video_ids, pa.int32()),
            "frame_idx": pa.array(frame_ids, pa.int32()),
            "bytes": pa.array(data, pa.large_binary()),
        }
    )
    lance.write_dataset(table, str(root), max_rows_per_file=max_rows_per_file)
    meta = {"layout": "lance-video-frames", "videos": entries, **(top_level_extra or {})}
    (Path(root) / "_metadata.json").write_text(json.dumps(meta))
    return Path(root)


def foreign_videos(
    lengths: Sequence[int] = (10, 2, 17, 6, 13),
    *,
    frame_size: tuple[int, int] = FRAME_SIZE,
    with_metadata: bool = True,
) -> list[dict[str, Any]]:
    """Video specs for :func:`write_foreign_root`, with unknown per-video fields."""
    height, width = frame_size
    videos = []
    for i, n in enumerate(lengths):
        video: dict[str, Any] = {
            "path": f"/footage/cam{i}/take_{i:02d}.mkv",
            "frames": make_frames(n, height, width, seed=100 + i),
            "x_tool_note": {"shot": i, "tags": ["a", "b"]},
        }
        if with_metadata:
            video["metadata"] = {"action": f"act{i % 2}", "score": i / 4, "label": i}
        videos.append(video)
    return videos


# --- the oracle -------------------------------------------------------------------


def oracle_windows(
    meta: dict[str, Any],
    *,
    window_length: int,
    frame_skip: int,
    hop_size: int,
    min_video_frames: int | None,
) -> list[tuple[int, int, list[int]]]:
    """``(video_idx, start_frame, frame_indices)`` of every sample, by FORMAT.md's loops."""
    stride = frame_skip + 1
    span = (window_length - 1) * stride + 1
    needed = max(span, min_video_frames or span)
    windows = []
    for video_idx, video in enumerate(meta["videos"]):
        if video["T"] < needed:
            continue
        start = 0
        while start <= video["T"] - span:
            windows.append((video_idx, start, [start + j * stride for j in range(window_length)]))
            start += hop_size
    return windows


def read_meta(root: Path) -> dict[str, Any]:
    return json.loads((Path(root) / "_metadata.json").read_text())


def oracle_sample(
    root: Path,
    meta: dict[str, Any],
    windows: list[tuple[int, int, list[int]]],
    index: int,
    *,
    frame_size: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Sample ``index`` (negative counts from the end), one Lance ``take`` per frame."""
    import lance

    if index < 0:
        index += len(windows)
    video_idx, start_frame, frame_indices = windows[index]
    video = meta["videos"][video_idx]
    dataset = lance.dataset(str(root))
    frames = []
    for frame_idx in frame_indices:
        row = video["start_row"] + frame_idx
        blob = dataset.take([row], columns=["bytes"]).column("bytes")[0].as_py()
        image = Image.open(io.BytesIO(blob)).convert("RGB")
        assert image.size == (video["W"], video["H"])
        if frame_size is not None:
            image = image.resize((frame_size[1], frame_size[0]), Image.Resampling.BILINEAR)
        frames.append(np.asarray(image))
    sample = {
        "video": np.stack(frames),
        "video_idx": video_idx,
        "filename": video["path"],
        "start_frame": start_frame,
        "frame_indices": frame_indices,
        "sample_idx": index,
    }
    for name, value in (video.get("metadata") or {}).items():
        sample[name] = value
    return sample


def assert_same_sample(
    got: dict[str, Any], want: dict[str, Any], *, indices_type: type = np.ndarray
) -> None:
    """Same keys in the same order, same values of the same Python types, equal pixels;
    ``frame_indices`` an int32 array (a list of ints with ``indices_type=list``: a map-style
    ``datasets`` row, which decodes its ``List`` feature as a list) of the oracle's values."""
    assert list(got) == list(want)
    for name, value in want.items():
        if name == "video":
            assert isinstance(got[name], np.ndarray)
            assert got[name].dtype == np.uint8
            assert got[name].shape == value.shape
            np.testing.assert_array_equal(got[name], value)
        elif name == "frame_indices":  # an int32 array, so that batches stack it
            assert type(got[name]) is indices_type, name
            if indices_type is np.ndarray:
                assert got[name].dtype == np.int32, name
            else:
                assert all(type(f) is int for f in got[name]), name
            assert_same_value(got[name], value, name)
        else:
            assert type(got[name]) is type(value), name
            assert got[name] == value, name


def set_spans(root: Path, spans: dict[int, list]) -> Path:
    """Write ``spans[v]`` into video ``v``'s entry of ``root``'s ``_metadata.json``."""
    path = root / "_metadata.json"
    meta = json.loads(path.read_text())
    for v, entry in enumerate(meta["videos"]):
        entry.pop("spans", None)
        if v in spans:
            entry["spans"] = spans[v]
    path.write_text(json.dumps(meta))
    return root


def assert_same_value(got: Any, want: Any, name: str = "") -> None:
    """``got`` equals ``want`` by value, an array or a list either way (a sample's
    ``frame_indices`` is an array, a ``datasets`` row's or the oracle's a list): same
    shape, equal elements (NaN equal to NaN); anything else by ``==``."""
    if isinstance(got, np.ndarray | list | tuple) or isinstance(want, np.ndarray | list | tuple):
        got_array, want_array = np.asarray(got), np.asarray(want)
        assert got_array.shape == want_array.shape, name
        np.testing.assert_array_equal(got_array, want_array, err_msg=name)
    else:
        assert got == want or (got != got and want != want), name  # NaN equals NaN


def assert_same_values(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Same keys in the same order, each value equal by :func:`assert_same_value`."""
    assert list(got) == list(want)
    for name, value in want.items():
        assert_same_value(got[name], value, name)


def assert_same_samples(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_same_sample(g, w)
