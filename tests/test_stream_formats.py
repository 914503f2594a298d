"""Streaming datasets in every ``datasets`` format: uint8 windows, the core's pixels.

Expected pixels always come from :class:`hf_lvf.VideoWindows` over the same root; the
core tests check that view against the reference oracle.
"""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa
import pytest
from _roots import hf_root

import hf_lvf
from hf_lvf.hf import formatters as _formatters

torch = pytest.importorskip("torch")

PARAMS = {"window_length": 4, "hop_size": 2}
LENGTHS = (9, 5, 12)  # windows per video: 3, 1, 5 -> 9 windows


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return hf_root(tmp_path_factory.mktemp("formats") / "clips", LENGTHS)


@pytest.fixture(scope="module")
def core(root):
    return hf_lvf.VideoWindows(root, **PARAMS)


def _stream(root):
    return datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )


def _as_numpy(value) -> np.ndarray:
    return value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def _check_rows(rows, core, *, kind) -> None:
    """Every row a uint8 ``kind`` window equal to the core's window of its ``sample_idx``."""
    assert [int(r["sample_idx"]) for r in rows] == list(range(9))
    for row in rows:
        video = row["video"]
        assert isinstance(video, kind)
        assert video.dtype == (torch.uint8 if kind is torch.Tensor else np.uint8)
        assert tuple(video.shape) == (4, 32, 48, 3)
        want = core.take([int(row["sample_idx"])])[0]["video"]
        np.testing.assert_array_equal(_as_numpy(video), want)


@pytest.mark.parametrize("fmt, kind", [("numpy", np.ndarray), ("torch", torch.Tensor)])
def test_streaming_formats_give_uint8_windows(root, core, fmt, kind):
    _check_rows(list(_stream(root).with_format(fmt)), core, kind=kind)
    _check_rows(list(core.to_iterable_dataset().with_format(fmt)), core, kind=kind)


def test_torch_windows_are_writable_tensors_of_their_own(root, core):
    # Read-only windows (views of a shared strip) are copied once, so writing is safe.
    rows = list(_stream(root).with_format("torch"))
    rows[0]["video"][:] = 0
    assert int(rows[1]["video"].sum()) == int(core.take([1])[0]["video"].sum())


def test_batched_stream_in_torch_is_a_uint8_stack(root, core):
    batches = list(_stream(root).batch(4).with_format("torch"))
    assert [len(b["sample_idx"]) for b in batches] == [4, 4, 1]
    for batch in batches:
        assert isinstance(batch["video"], torch.Tensor) and batch["video"].dtype == torch.uint8
        want = core.read_video([int(i) for i in batch["sample_idx"]])
        np.testing.assert_array_equal(batch["video"].numpy(), want)


def test_dataloader_over_a_torch_stream(root, core):
    loader = torch.utils.data.DataLoader(_stream(root).with_format("torch"), batch_size=4)
    batches = list(loader)
    assert [b["video"].dtype for b in batches] == [torch.uint8] * 3
    got = torch.cat([b["video"] for b in batches]).numpy()
    ids = torch.cat([b["sample_idx"] for b in batches]).tolist()
    assert ids == list(range(9))
    np.testing.assert_array_equal(got, core.read_video(ids))


def test_other_datasets_keep_datasets_own_formatting():
    # A plain datasets dataset of uint8 arrays: datasets' formatters upcast it, and still do.
    features = datasets.Features({"v": datasets.Array4D((2, 3, 4, 3), "uint8")})
    plain = datasets.Dataset.from_dict({"v": [np.ones((2, 3, 4, 3), np.uint8)]}, features=features)
    assert next(iter(plain.to_iterable_dataset().with_format("numpy")))["v"].dtype == np.int64
    assert next(iter(plain.with_format("torch")))["v"].dtype == torch.int64


def test_handed_out_windows_are_known_by_their_memory_while_alive():
    window = np.arange(2 * 3 * 4 * 3, dtype=np.uint8).reshape(2, 3, 4, 3)
    _formatters.mark_windows([window])
    assert _formatters.is_handed_out(window)
    assert _formatters.is_handed_out(window[:])  # a view of its memory, same shape
    assert not _formatters.is_handed_out(window.copy())
    assert not _formatters.is_handed_out(window[:1])
    key = (window.__array_interface__["data"][0], window.shape)
    assert key in _formatters._handed_out
    del window
    assert key not in _formatters._handed_out  # forgotten with the array


# --- table formats: datasets is handed Arrow, not nested lists ---------------------------------


def _table_videos(rows, fmt) -> list[np.ndarray]:
    if fmt == "arrow":
        return [r.column("video").combine_chunks().to_numpy(zero_copy_only=False)[0] for r in rows]
    if fmt == "pandas":
        return [r["video"].iloc[0] for r in rows]
    # polars keeps the extension type (UInt8 inside); its to_arrow() loses the values of an
    # extension column (as for any datasets Array4D), so the pixels come from to_list().
    assert all("List(List(List(List(UInt8))))" in str(r["video"].dtype) for r in rows)
    return [np.array(r["video"].to_list()[0], dtype=np.uint8) for r in rows]


@pytest.mark.parametrize("fmt", ["arrow", "pandas", "polars"])
def test_table_formats_give_the_core_windows(root, core, fmt):
    rows = list(_stream(root).with_format(fmt))
    assert len(rows) == 9 and all(len(r) == 1 for r in rows)
    videos = _table_videos(rows, fmt)
    assert [v.dtype for v in videos] == [np.uint8] * 9
    np.testing.assert_array_equal(np.stack(videos), core.read_video(range(9)))
    ids = [int(np.asarray(r["sample_idx"])[0]) for r in rows]
    assert ids == list(range(9))


def _datasets_table(examples):
    """The table datasets' own conversion builds from examples: the oracle of rows_table."""
    from datasets.features.features import cast_to_python_objects

    return pa.Table.from_pylist(cast_to_python_objects(list(examples), only_1d_for_numpy=True))


def test_rows_table_is_datasets_table_on_the_windows_memory(core):
    sample = core.take([3])[0]
    table = _formatters.rows_table([sample], _datasets_table)
    assert table.equals(_datasets_table([sample]))  # the same schema and values, column order
    values = table.column("video").chunk(0).flatten().flatten().flatten().flatten()
    assert values.buffers()[1].address == sample["video"].__array_interface__["data"][0]
    # Other dense arrays too (any numeric dtype, strided), several rows, a ragged column.
    grid = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    rows = [
        {"a": grid, "b": np.arange(6, dtype=np.int64).reshape(3, 2)[::2], "c": [1, 2], "d": "x"},
        {"a": grid + 1, "b": np.ones((2, 2), dtype=np.int64), "c": [3], "d": None},
    ]
    assert _formatters.rows_table(rows, _datasets_table).equals(_datasets_table(rows))
    only = [{"v": grid}]
    assert _formatters.rows_table(only, _datasets_table).equals(_datasets_table(only))


def test_table_formats_use_the_dense_conversion():
    # hf_lvf wraps the one datasets function the table formats of a stream go through.
    from datasets import iterable_dataset

    assert iterable_dataset._convert_to_arrow._hf_lvf_dense
    examples = [(i, {"v": np.full((2, 2), i, dtype=np.uint8), "i": i}) for i in range(5)]
    batches = list(iterable_dataset._convert_to_arrow(examples, batch_size=2))
    assert [key for key, _ in batches] == ["0_1", "2_3", "4"]
    assert [t.column("i").to_pylist() for _, t in batches] == [[0, 1], [2, 3], [4]]
    dropped = list(iterable_dataset._convert_to_arrow(examples, 2, drop_last_batch=True))
    assert [key for key, _ in dropped] == ["0_1", "2_3"]
    ((_, everything),) = iterable_dataset._convert_to_arrow(examples, batch_size=None)
    assert everything.equals(_datasets_table(e for _, e in examples))


def test_mapped_arrow_stream_keeps_the_windows(root, core):
    stream = _stream(root).with_format("arrow").map(lambda t: t, batched=True, batch_size=4)
    tables = list(stream.iter(batch_size=4))
    assert [t.num_rows for t in tables] == [4, 4, 1]
    videos = [v for t in tables for v in t.column("video").to_pylist()]
    np.testing.assert_array_equal(np.array(videos), core.read_video(range(9)))
    assert "uint8" in str(tables[0].column("video").type)


def test_buffer_shuffled_torch_stream_stays_uint8(root, core):
    rows = list(_stream(root).shuffle(seed=0, buffer_size=4).with_format("torch"))
    assert sorted(int(r["sample_idx"]) for r in rows) == list(range(9))
    assert {r["video"].dtype for r in rows} == {torch.uint8}
    for row in rows:
        want = core.take([int(row["sample_idx"])])[0]["video"]
        np.testing.assert_array_equal(row["video"].numpy(), want)


@pytest.mark.parametrize("fmt", ["torch", "arrow"])
def test_formatted_stream_resumes_at_the_exact_window(root, fmt):
    def ids(rows):
        return [int(np.asarray(r["sample_idx"]).reshape(-1)[0]) for r in rows]

    for stop in (1, 4, 8):
        ds = _stream(root).with_format(fmt)
        it = iter(ds)
        head = ids(next(it) for _ in range(stop))
        state = ds.state_dict()
        resumed = _stream(root).with_format(fmt)
        resumed.load_state_dict(state)
        assert head + ids(resumed) == list(range(9))
