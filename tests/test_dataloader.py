"""PyTorch DataLoaders over every front end: exactly-once coverage, epochs, and no hangs.

Tests that need the default ``fork`` start method run in a fresh interpreter, since this
test process has long since opened Lance (and a fork of it must refuse to read). Every
DataLoader has a timeout, so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

import sys

import datasets
import datasets.distributed
import numpy as np
import pytest
from _loading import PARAMS, core_crcs, crc, run_script, split_dir
from _roots import hf_root

import hf_lvf
from hf_lvf import VideoWindows, safe_dataloader

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")
LOADER_TIMEOUT = 60


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return split_dir(tmp_path_factory.mktemp("loaders") / "clips")


def _pairs(loader) -> list[tuple[int, int]]:
    """``(sample_idx, crc32 of the pixels)`` of every window a loader yields, in order."""
    out = []
    for batch in loader:
        ids = batch["sample_idx"]
        videos = batch["video"]
        if isinstance(ids, int):  # batch_size=None
            ids, videos = [ids], [videos]
        out += [(int(i), crc(v)) for i, v in zip(ids, videos, strict=True)]
    return out


def test_default_fork_start_method(data_dir):
    # The parent never read a frame: forked workers open Lance themselves. Once the parent
    # has read one, a forked worker fails at once with ForkSafetyError instead of hanging.
    out = run_script(
        f"""
        import json, datasets, hf_lvf, zlib
        import numpy as np
        from torch.utils.data import DataLoader

        def pairs(loader):
            out = []
            for b in loader:
                ids, videos = b["sample_idx"], b["video"]
                if isinstance(ids, int):
                    ids, videos = [ids], [videos]
                out += [[int(i), zlib.crc32(np.ascontiguousarray(v.numpy()).tobytes())]
                        for i, v in zip(ids, videos)]
            return out

        root = {str(data_dir / "train")!r}
        params = {PARAMS!r}
        result = {{}}
        stream = datasets.load_dataset("hf_lvf", data_dir=root, split="train", streaming=True,
                                       shard_windows=2, **params)
        result["streaming"] = pairs(DataLoader(stream, batch_size=None, num_workers=2,
                                               timeout={LOADER_TIMEOUT}))
        wrapper = hf_lvf.VideoWindows(root, **params).to_iterable_dataset(shuffle=True, seed=4)
        result["wrapper"] = pairs(DataLoader(wrapper, batch_size=None, num_workers=2,
                                             timeout={LOADER_TIMEOUT}))
        mapped = datasets.load_dataset("hf_lvf", data_dir=root, split="train", **params)
        result["map"] = pairs(DataLoader(mapped, batch_size=3, shuffle=True, num_workers=2,
                                         timeout={LOADER_TIMEOUT}))
        mapped[0]  # the parent opens Lance
        try:
            list(DataLoader(mapped, batch_size=3, num_workers=2, timeout={LOADER_TIMEOUT}))
            result["after_parent_read"] = None
        except hf_lvf.errors.ForkSafetyError as err:
            result["after_parent_read"] = str(err)
        print(json.dumps(result))
        """,
        HF_DATASETS_CACHE=str(data_dir.parent / "cache-fork"),
    )
    want = core_crcs(data_dir / "train", **PARAMS)
    for name in ("streaming", "wrapper", "map"):
        got = dict(out[name])
        assert len(out[name]) == len(want), name  # every window exactly once
        assert got == want, name
    assert "was forked from pid" in out["after_parent_read"]
    assert "forkserver" in out["after_parent_read"]


def test_streaming_two_nodes_two_workers(data_dir):
    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(data_dir), split="train", streaming=True, shard_windows=2, **PARAMS
    )
    seen = []
    for rank in range(2):
        node = datasets.distributed.split_dataset_by_node(ds, rank=rank, world_size=2)
        loader = safe_dataloader(node, batch_size=2, num_workers=2, timeout=LOADER_TIMEOUT)
        seen += _pairs(loader)
    want = core_crcs(data_dir / "train", **PARAMS)
    assert len(seen) == len(want)
    assert dict(seen) == want


def test_wrapper_two_nodes_two_workers_two_epochs(data_dir):
    windows = VideoWindows(data_dir / "validation", window_length=2)
    want = core_crcs(data_dir / "validation", window_length=2)
    ds = windows.to_iterable_dataset(shuffle=True, seed=9, num_shards=8)
    nodes = [datasets.distributed.split_dataset_by_node(ds, rank=r, world_size=2) for r in (0, 1)]
    loaders = [
        safe_dataloader(node, batch_size=None, num_workers=2, timeout=LOADER_TIMEOUT)
        for node in nodes
    ]
    orders = []
    for epoch in (0, 1, 0):  # persistent workers follow set_epoch
        seen = []
        for node, loader in zip(nodes, loaders, strict=True):
            node.set_epoch(epoch)
            seen += _pairs(loader)
        assert len(seen) == len(want)
        assert dict(seen) == want
        orders.append([i for i, _ in seen])
    assert orders[0] != orders[1]
    assert orders[0] == orders[2]


def test_map_style_after_the_parent_read(data_dir):
    ds = datasets.load_dataset("hf_lvf", data_dir=str(data_dir), split="test", **PARAMS)
    ds[0]  # opens Lance here: a fork would now be refused, forkserver is fine
    loader = safe_dataloader(ds, batch_size=4, shuffle=True, num_workers=2, timeout=LOADER_TIMEOUT)
    batch = next(iter(loader))
    assert batch["video"].dtype == torch.uint8
    seen = _pairs(loader)
    want = core_crcs(data_dir / "test", **PARAMS)
    assert len(seen) == len(want)
    assert dict(seen) == want


def test_core_view_through_safe_dataloader(tmp_path):
    root = hf_root(tmp_path / "root", (9, 7))
    w = VideoWindows(root, window_length=3)
    w[0]
    seen = _pairs(safe_dataloader(w, batch_size=4, num_workers=2, timeout=LOADER_TIMEOUT))
    assert dict(seen) == core_crcs(root, window_length=3)


def test_safe_dataloader_arguments(data_dir):
    w = VideoWindows(data_dir / "test", window_length=2)
    with pytest.raises(
        ValueError, match=r"multiprocessing_context must be 'forkserver' or 'spawn'"
    ):
        safe_dataloader(w, multiprocessing_context="fork")
    with pytest.raises(ValueError, match=r"num_workers must be an integer >= 0, got -1"):
        safe_dataloader(w, num_workers=-1)
    loader = safe_dataloader(w, batch_size=5, num_workers=0)
    assert loader.num_workers == 0 and loader.batch_size == 5
    loader = safe_dataloader(w, num_workers=1)
    assert loader.persistent_workers
    assert loader.multiprocessing_context.get_start_method() == "forkserver"


def test_safe_dataloader_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.data", None)
    with pytest.raises(ImportError, match=r"pip install 'hf-lvf\[torch\]'"):
        hf_lvf.safe_dataloader([])


# --- missing metadata collates (issue 13) ----------------------------------------------------


def _partly_missing_root(path):
    import numpy as np

    from hf_lvf.write import write_frames

    fields = [
        {"label": 2, "score": 0.5, "note": "ok", "flag": True},
        {"label": 1},  # a metadata.csv that missed this file's other columns
        {"score": 1.5, "note": None, "flag": False},  # null counts as missing too
        {},
    ]
    videos = (
        (f"v{i}", iter(np.full((5, 8, 8, 3), 40 * i, np.uint8)), meta)
        for i, meta in enumerate(fields)
    )
    return write_frames(path, videos)


def _epoch(loader) -> dict[str, list]:
    """Every batch of one epoch, the metadata columns concatenated as Python values."""
    got: dict[str, list] = {"label": [], "score": [], "note": [], "flag": []}
    for batch in loader:
        assert batch["video"].dtype == torch.uint8
        for name in got:
            value = batch[name]
            got[name] += value.tolist() if isinstance(value, torch.Tensor) else list(value)
    return got


# Windows of a sequential pass are read-only views; PyTorch's default collate warns once that
# it wraps them, then stacks them into a new tensor (the README says so).
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning")
def test_missing_metadata_collates_in_every_front_end(tmp_path):
    from torch.utils.data import DataLoader

    root = _partly_missing_root(tmp_path / "r")
    params = {"window_length": 2, "hop_size": 2}  # 2 windows per video
    core = VideoWindows(root, **params)
    assert dict(core.metadata_fields) == {
        "label": "int64",
        "score": "float64",
        "note": "string",
        "flag": "int8",  # a bool some video lacks: 1, 0, -1
    }
    assert repr(hf_lvf.MISSING_VALUES) == "{'int64': -1, 'int8': -1, 'float64': nan, 'string': ''}"
    nan = float("nan")
    want = {
        "label": [2, 2, 1, 1, -1, -1, -1, -1],
        "score": [0.5, 0.5, nan, nan, 1.5, 1.5, nan, nan],
        "note": ["ok", "ok", "", "", "", "", "", ""],
        "flag": [1, 1, -1, -1, 0, 0, -1, -1],
    }
    map_style = datasets.load_dataset("hf_lvf", data_dir=str(root), split="train", **params)
    streaming = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=True, **params
    )
    for ds in (core, map_style, streaming, core.to_iterable_dataset()):
        features = ds.features
        assert {n: features[n].dtype for n in want} == dict(core.metadata_fields), type(ds)
    loaders = {
        "core": DataLoader(core, batch_size=3),
        "map-style torch": DataLoader(map_style.with_format("torch"), batch_size=3),
        "streaming": DataLoader(streaming, batch_size=3),
        "core iterable": DataLoader(core.to_iterable_dataset(), batch_size=3),
    }
    for name, loader in loaders.items():
        got = _epoch(loader)
        assert got["label"] == want["label"] and got["flag"] == want["flag"], name
        assert got["note"] == want["note"], name
        np.testing.assert_array_equal(got["score"], want["score"], err_msg=name)


def test_the_forkserver_imports_once_what_every_worker_imports(monkeypatch, data_dir):
    """safe_dataloader adds torch, hf_lvf and (where this process uses it) datasets to the
    forkserver's preload, after what it had (``__main__``): workers fork with them imported.
    A fresh server object stands in for the process's own, which may already run."""
    from multiprocessing import forkserver

    from hf_lvf.training import loader

    server = forkserver.ForkServer()
    monkeypatch.setattr(forkserver, "_forkserver", server)
    monkeypatch.setattr(forkserver, "set_forkserver_preload", server.set_forkserver_preload)
    safe_dataloader(VideoWindows(data_dir / "train", **PARAMS), batch_size=2, num_workers=1)
    assert server._preload_modules == ["__main__", "torch", "hf_lvf", "datasets"]
    monkeypatch.delitem(sys.modules, "datasets")  # a process that never imported datasets
    server.set_forkserver_preload(["__main__"])
    loader._preload_forkserver()
    assert server._preload_modules == ["__main__", "torch", "hf_lvf"]
    safe_dataloader(VideoWindows(data_dir / "train", **PARAMS), num_workers=1,
                    multiprocessing_context="spawn")  # fmt: skip
    assert server._preload_modules == ["__main__", "torch", "hf_lvf"]  # spawn: untouched
