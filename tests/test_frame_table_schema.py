"""The frames/ writers take the table's schema: FRAME_SCHEMA followed by per-frame columns."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

from hf_lvf.frames import FRAME_SCHEMA, columns_schema, frame_columns
from hf_lvf.write.frame_table import (
    commit_fragments,
    frame_table_schema,
    write_fragments,
    write_frame_table,
)


def _batches(video_id: int, num_frames: int, action: np.ndarray, schema: pa.Schema):
    columns = frame_columns(
        {"action": action, "observation.state": action[:, :2]}, num_frames, where="v"
    )
    yield pa.record_batch(
        [
            pa.array(np.full(num_frames, video_id, np.int32)),
            pa.array(np.arange(num_frames, dtype=np.int32)),
            pa.array([b"x%d" % i for i in range(num_frames)], pa.large_binary()),
            *columns.values(),
        ],
        schema=schema,
    )


def _schema() -> pa.Schema:
    sample = frame_columns(
        {"action": np.zeros((1, 3), np.float32), "observation.state": np.zeros((1, 2), np.float32)},
        1,
        where="v",
    )
    return frame_table_schema(columns_schema(sample))


def test_frame_table_schema_appends_the_columns_and_refuses_a_frame_column_name() -> None:
    schema = _schema()
    assert schema.names == ["video_id", "frame_idx", "bytes", "action", "observation"]
    assert schema.field("action").type == pa.list_(pa.float32(), 3)
    assert frame_table_schema() == FRAME_SCHEMA
    with pytest.raises(ValueError, match="'bytes' would replace the frame column"):
        frame_table_schema([pa.field("bytes", pa.int8())])


def test_fragments_and_tables_are_written_with_per_frame_columns(tmp_path: Path) -> None:
    schema = _schema()
    first = np.arange(12, dtype=np.float32).reshape(4, 3)
    second = -np.arange(6, dtype=np.float32).reshape(2, 3)
    folder = tmp_path / "ds"
    fragments = [
        *write_fragments(_batches(0, 4, first, schema), folder, schema=schema),
        *write_fragments(_batches(1, 2, second, schema), folder, schema=schema),
    ]
    commit_fragments(folder, fragments, schema=schema)
    table = lance.dataset(str(folder)).to_table()
    assert table.schema == schema
    actions = np.array(table.column("action").to_pylist(), np.float32)
    np.testing.assert_array_equal(actions, np.concatenate([first, second]))
    states = table.column("observation").combine_chunks().field("state").to_pylist()
    np.testing.assert_array_equal(np.array(states), np.concatenate([first, second])[:, :2])

    whole = tmp_path / "whole"
    write_frame_table(_batches(0, 4, first, schema), whole, schema=schema)
    assert lance.dataset(str(whole)).schema == schema
    with pytest.raises(ValueError, match="schema must start with the frame columns"):
        write_frame_table(iter(()), tmp_path / "bad", schema=pa.schema([("action", pa.int8())]))
    assert not (tmp_path / "bad").exists()


def test_frame_batches_slice_the_per_frame_columns_alongside_the_frames() -> None:
    from hf_lvf.write.writer import frame_batches

    num_frames = 70  # three batches of at most 32 frames
    action = np.arange(num_frames * 3, dtype=np.float32).reshape(num_frames, 3)
    columns = frame_columns(
        {"action": action, "observation.state": action[:, :2]}, num_frames, where="v"
    )
    schema = frame_table_schema(columns_schema(columns))
    frames = [np.full((4, 4, 3), i, np.uint8) for i in range(num_frames)]
    batches = list(
        frame_batches(
            3, "v", frames, encode=bytes, on_frame=lambda size: None, columns=columns, schema=schema
        )
    )
    assert [len(b) for b in batches] == [32, 32, 6]
    table = pa.Table.from_batches(batches)
    assert table.column("frame_idx").to_pylist() == list(range(num_frames))
    np.testing.assert_array_equal(np.array(table.column("action").to_pylist()), action)
    with pytest.raises(ValueError, match=r"video 'v' has 69 frames but 70 values"):
        list(
            frame_batches(
                3, "v", frames[:69], encode=bytes, on_frame=len, columns=columns, schema=schema
            )
        )
    with pytest.raises(ValueError, match=r"has the per-frame columns \['action', 'observation'\]"):
        list(frame_batches(3, "v", frames, encode=bytes, on_frame=len, columns=columns))
