"""A LeRobot-style root for per-frame field tests: frames written by hf_lvf.write.write_frames, the
per-frame columns added with pyarrow + lance directly (the oracle: not hf_lvf's writer)."""

from __future__ import annotations

import json

import lance
import numpy as np
import pyarrow as pa

import hf_lvf

LENGTHS = (5, 3, 7)  # three episodes
FPS = 10.0


def field_arrays(n: int) -> dict[str, np.ndarray]:
    """The written values of all rows, by dotted field name (row order = frame order)."""
    rows = np.arange(n)
    return {
        "observation.state": (rows[:, None] * 10 + np.arange(6)).astype(np.float32) + 0.5,
        "action": (rows[:, None] * 100 + np.arange(6)).astype(np.float32) - 0.25,
        "timestamp": np.concatenate([np.arange(t) / FPS for t in LENGTHS]).astype(np.float32),
        "done": np.concatenate([np.arange(t) == t - 1 for t in LENGTHS]),
        "note": np.array([f"row {r}" for r in rows], dtype=object),
    }


def write_field_root(root, extra: dict[str, pa.Array] | None = None) -> dict[str, np.ndarray]:
    """Write the root; returns :func:`field_arrays` of its rows."""
    rng = np.random.default_rng(0)
    videos = [
        (f"ep{e}.mp4", [rng.integers(0, 255, (8, 8, 3), np.uint8) for _ in range(t)], {"fps": FPS})
        for e, t in enumerate(LENGTHS)
    ]
    hf_lvf.write.write_frames(root, videos, lossless=True)
    values = field_arrays(sum(LENGTHS))
    state = pa.FixedSizeListArray.from_arrays(pa.array(values["observation.state"].ravel()), 6)
    columns = {
        "observation": pa.StructArray.from_arrays([state], names=["state"]),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(values["action"].ravel()), 6),
        "timestamp": pa.array(values["timestamp"]),
        "done": pa.array(values["done"]),
        "note": pa.array(values["note"].tolist(), pa.string()),
        **(extra or {}),
    }
    add_columns(root, columns)
    return values


def add_columns(root, columns: dict[str, pa.Array]) -> None:
    """Add ``columns`` (one value per row, in row order) to the root's table with lance's
    ``add_columns`` (row = start_row of video_id + frame_idx), and point ``_metadata.json``
    at the new version."""
    meta = json.loads((root / "_metadata.json").read_text())
    start = {v["id"]: v["start_row"] for v in meta["videos"]}
    table = pa.table(columns)

    def values(batch: pa.RecordBatch) -> pa.RecordBatch:
        ids = batch.column("video_id").to_numpy()
        rows = np.array([start[i] for i in ids.tolist()]) + batch.column("frame_idx").to_numpy()
        return pa.RecordBatch.from_arrays(
            [table.column(n).combine_chunks().take(pa.array(rows)) for n in table.column_names],
            names=table.column_names,
        )

    ds = lance.dataset(str(root))
    ds.add_columns(values, read_columns=["video_id", "frame_idx"])
    meta["lance_version"] = lance.dataset(str(root)).version
    (root / "_metadata.json").write_text(json.dumps(meta))
