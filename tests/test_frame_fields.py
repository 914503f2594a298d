"""layout.frame_fields: the Arrow types of per-frame fields, both ways (FORMAT.md)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hf_lvf.errors import LayoutError
from hf_lvf.frames import (
    field_values,
    frame_columns,
    frame_fields,
    gather_column,
)


def _schema_written_by_hand() -> pa.Table:
    # As another tool writes it: pyarrow directly, LeRobot's dotted name as a struct child.
    state = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 3)
    return pa.table(
        {
            "video_id": pa.array([0, 0, 0, 0], pa.int32()),
            "frame_idx": pa.array([0, 1, 2, 3], pa.int32()),
            "bytes": pa.array([b""] * 4, pa.large_binary()),
            "observation": pa.StructArray.from_arrays([state], names=["state"]),
            "done": pa.array([False, False, False, True]),
            "note": pa.array(["a", "b", "c", "d"]),
            "timestamp": pa.array([0.0, 0.1, 0.2, 0.3], pa.float32()),
        }
    )


def test_fields_are_the_other_columns_flattened_with_their_dtype_and_shape():
    fields = frame_fields(_schema_written_by_hand().schema, where="r")
    assert list(fields) == ["observation.state", "done", "note", "timestamp"]
    state = fields["observation.state"]
    assert (state.column, state.dtype, state.shape) == (("observation", "state"), "float32", (3,))
    assert (fields["done"].dtype, fields["done"].shape) == ("bool", ())
    assert fields["note"].is_string


def test_values_of_a_slice_are_the_rows_of_that_slice():
    table = _schema_written_by_hand().slice(1, 2)
    fields = frame_fields(table.schema, where="r")
    state = field_values(
        gather_column(table, fields["observation.state"]), fields["observation.state"]
    )
    assert state.dtype == np.float32
    assert np.array_equal(state, np.arange(3, 9, dtype=np.float32).reshape(2, 3))
    assert field_values(gather_column(table, fields["note"]), fields["note"]) == ["b", "c"]
    done = field_values(gather_column(table, fields["done"]), fields["done"])
    assert done.dtype == np.bool_ and done.tolist() == [False, False]


def test_written_columns_read_back_exactly():
    arrays = {
        "observation.state": np.arange(8, dtype=np.float32).reshape(4, 2),
        "action": np.arange(16, dtype=np.int16).reshape(4, 2, 2),
        "caption": ["w", "x", "y", "z"],
    }
    table = pa.table(frame_columns(arrays, 4, where="video 'a'"))
    fields = frame_fields(table.schema, where="r")
    for name, expected in arrays.items():
        got = field_values(gather_column(table, fields[name]), fields[name])
        if isinstance(expected, list):
            assert got == expected
        else:
            assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("kind", [pa.list_(pa.float32()), pa.binary(), pa.list_(pa.string(), 2)])
def test_a_type_a_window_cannot_carry_is_refused_naming_the_column(kind):
    schema = pa.schema([("bytes", pa.large_binary()), pa.field("weird", kind)])
    with pytest.raises(LayoutError, match=r"column 'weird' of root 'r' has type"):
        frame_fields(schema, where="r")


def test_values_of_another_length_or_kind_are_refused():
    with pytest.raises(ValueError, match=r"'action' of video 'a' has 3 values for 4 frames"):
        frame_columns({"action": np.zeros((3, 6), np.float32)}, 4, where="video 'a'")
    with pytest.raises(TypeError, match=r"'action' of video 'a' must be an array of numbers"):
        frame_columns({"action": np.zeros(4, dtype=object)}, 4, where="video 'a'")
    with pytest.raises(ValueError, match=r"'bytes'"):
        frame_columns({"bytes": np.zeros(4)}, 4, where="video 'a'")
