"""Worker processes over hf_lvf datasets after the parent has read: map/filter with
``num_proc`` (whose pool hf_lvf starts with forkserver), and ``safe_dataloader`` over
datasets that carry lambdas.

Expected pixels come from :class:`hf_lvf.VideoWindows`; counts are computed here.
"""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from _roots import hf_root

import hf_lvf
from hf_lvf import safe_dataloader

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")
PARAMS = {"window_length": 4, "hop_size": 2}
LENGTHS = (9, 5, 12)  # 3 + 1 + 5 = 9 windows; labels 0, 1, 2
TIMEOUT = 60


@pytest.fixture(scope="module")
def root_and_windows(tmp_path_factory):
    """A root of 3 videos and its windows as the core reads them, by sample_idx."""
    root = hf_root(tmp_path_factory.mktemp("processes") / "clips", LENGTHS)
    return root, list(hf_lvf.VideoWindows(root, **PARAMS))


def _stream(root):
    return datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **PARAMS
    )


def _rows(loader) -> list[dict]:
    out = []
    for batch in loader:
        for i in range(len(batch["sample_idx"])):
            out.append({k: v[i] for k, v in batch.items()})
    return out


def test_safe_dataloader_carries_a_lambda_in_stream_map(root_and_windows):
    root, windows = root_and_windows
    next(iter(_stream(root)))  # the parent has read: a fork would have to refuse
    stream = _stream(root).shuffle(seed=4).map(lambda r: {"tenfold": r["label"] * 10})
    loader = safe_dataloader(stream, batch_size=2, num_workers=2, timeout=TIMEOUT)
    orders = []
    for epoch in (0, 1):
        stream.set_epoch(epoch)  # reaches the persistent workers
        rows = _rows(loader)
        ids = [int(r["sample_idx"]) for r in rows]
        assert sorted(ids) == list(range(9))
        labels = [int(windows[i]["label"]) for i in ids]
        assert [int(r["tenfold"]) for r in rows] == [10 * label for label in labels]
        for row in rows:
            assert row["video"].dtype == torch.uint8
            np.testing.assert_array_equal(
                row["video"].numpy(), windows[int(row["sample_idx"])]["video"]
            )
        orders.append(ids)
    assert orders[0] != orders[1]  # set_epoch reached the workers: another order


def test_safe_dataloader_carries_a_closure_in_with_transform_and_filter(root_and_windows, tmp_path):
    root, windows = root_and_windows
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp_path), **PARAMS
    )
    ds[0]  # the parent has read
    factor = 3  # a closure, not only a lambda

    def shown(batch):
        return {"n": [f * factor for f in batch["start_frame"]], "video": batch["video"]}

    loader = safe_dataloader(
        ds.with_transform(shown),
        batch_size=4,
        num_workers=2,
        multiprocessing_context="spawn",
        timeout=TIMEOUT,
    )
    batches = list(loader)
    assert [int(n) for b in batches for n in b["n"]] == [3 * int(w["start_frame"]) for w in windows]
    videos = np.concatenate([b["video"].numpy() for b in batches])
    np.testing.assert_array_equal(videos, np.stack([w["video"] for w in windows]))

    skipped = 1
    kept = _stream(root).filter(lambda r: r["label"] != skipped)
    rows = _rows(safe_dataloader(kept, batch_size=3, num_workers=2, timeout=TIMEOUT))
    want = [i for i, w in enumerate(windows) if int(w["label"]) != skipped]
    assert len(want) == 9 - 1  # video 1 (label 1) has one window
    assert sorted(int(r["sample_idx"]) for r in rows) == want


def test_picklable_datasets_reach_the_dataloader_as_they_are(root_and_windows):
    core = hf_lvf.VideoWindows(root_and_windows[0], **PARAMS)
    loader = safe_dataloader(core, batch_size=2, num_workers=1, timeout=TIMEOUT)
    assert loader.dataset is core


def test_map_and_filter_with_num_proc_after_a_read(root_and_windows, tmp_path):
    root, windows = root_and_windows
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", cache_dir=str(tmp_path), **PARAMS
    )
    ds[0]  # the parent has read: datasets' forked pool could not
    offset = 7  # a closure

    def pixel_sum(row):
        return {"total": int(row["video"].astype(np.int64).sum()) + offset}

    summed = ds.map(pixel_sum, num_proc=2, remove_columns=["video"])
    want = [int(w["video"].astype(np.int64).sum()) + offset for w in windows]
    assert summed["total"] == want
    assert summed["sample_idx"] == list(range(9))

    kept = ds.filter(lambda row: row["label"] == 2, num_proc=2)
    want_ids = [i for i, w in enumerate(windows) if int(w["label"]) == 2]
    assert len(want_ids) == 5  # the 12-frame video
    assert kept["sample_idx"] == want_ids
    for row, i in zip(kept.with_format("numpy"), want_ids, strict=True):
        np.testing.assert_array_equal(row["video"], windows[i]["video"])
