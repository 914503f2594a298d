"""Streaming datasets in every ``datasets`` format: uint8 windows, the core's pixels.

Expected pixels always come from :class:`hf_lvf.VideoWindows` over the same root; the
core tests check that view against the reference oracle.
"""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from _roots import hf_root

import hf_lvf
from hf_lvf import _formatters

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
