"""``load_dataset("hf_lvf", ...)`` in both modes against the core view (and the oracle)."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import datasets.distributed
import numpy as np
import pytest
from _loading import (
    PARAMS,
    PROJECT_ROOT,
    SPLITS,
    assert_rows_equal,
    core_samples,
    long_videos_root,
    mixed_size_root,
    run_script,
    split_dir,
)
from _roots import assert_same_sample, oracle_sample, oracle_windows, read_meta

import hf_lvf
from hf_lvf import HfLvfConfig, RootNotFoundError, VideoWindows, WindowVideo
from hf_lvf.write.synthetic import write_synthetic_root

MODES = pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return split_dir(tmp_path_factory.mktemp("builder") / "clips")


@pytest.fixture(autouse=True)
def _from_project_root(monkeypatch):
    # The project root holds a folder named hf_lvf (the package): the name must still resolve.
    monkeypatch.chdir(PROJECT_ROOT)


def _load(streaming: bool, **kwargs):
    return datasets.load_dataset("hf_lvf", streaming=streaming, **kwargs)


# --- both modes return the core's windows --------------------------------------------------


@MODES
def test_splits_equal_core(data_dir, streaming):
    ds = _load(streaming, data_dir=str(data_dir), **PARAMS)
    assert list(ds) == list(SPLITS)
    for split in SPLITS:
        assert_rows_equal(ds[split], core_samples(data_dir / split, **PARAMS))


@MODES
def test_core_equals_oracle_through_load_dataset(data_dir, streaming):
    root = data_dir / "train"
    meta = read_meta(root)
    windows = oracle_windows(meta, **PARAMS)
    rows = list(_load(streaming, data_dir=str(root), split="train", **PARAMS))
    for index in (0, 4, len(windows) - 1):
        want = oracle_sample(root, meta, windows, index)  # map-style rows decode lists
        assert_same_sample(rows[index], want, indices_type=np.ndarray if streaming else list)


@MODES
def test_one_root_is_the_train_split(data_dir, streaming):
    ds = _load(streaming, data_dir=str(data_dir / "validation"), window_length=4)
    assert list(ds) == ["train"]
    assert_rows_equal(ds["train"], core_samples(data_dir / "validation", window_length=4))


@MODES
def test_data_files_roots_and_metadata_files(data_dir, streaming):
    data_files = {
        "train": str(data_dir / "train"),
        "test": [str(data_dir / "test" / "_metadata.json")],
    }
    ds = _load(streaming, data_files=data_files, window_length=2, hop_size=3)
    assert list(ds) == ["train", "test"]
    for split in ("train", "test"):
        assert_rows_equal(ds[split], core_samples(data_dir / split, window_length=2, hop_size=3))


@MODES
def test_relative_data_files_under_data_dir(data_dir, streaming):
    ds = _load(streaming, data_dir=str(data_dir), data_files={"eval": "test"}, window_length=2)
    assert list(ds) == ["eval"]
    assert_rows_equal(ds["eval"], core_samples(data_dir / "test", window_length=2))


def _two_roots(tmp_path) -> Path:
    """parts/train/ holding two roots with different fields and sizes."""
    parent = tmp_path / "parts"
    hf_lvf.write.write_frames(
        parent / "train" / "a",
        [("a0", iter(np.full((6, 32, 48, 3), 7, np.uint8)), {"label": 1})],
    )
    mixed_size_root(parent / "train" / "b")
    return parent


@MODES
def test_split_of_several_roots(tmp_path, streaming):
    # train/ holds two roots with different fields: windows follow root by root, in name order,
    # and a field a root lacks takes its dtype's placeholder (NaN for floats, -1 for ints).
    parent = _two_roots(tmp_path)
    ds = _load(streaming, data_dir=str(parent), window_length=2, frame_size=(16, 16))
    assert list(ds) == ["train"]
    a = core_samples(parent / "train" / "a", window_length=2, frame_size=(16, 16))
    b = core_samples(parent / "train" / "b", window_length=2, frame_size=(16, 16))
    rows = list(ds["train"])
    assert_rows_equal(rows[: len(a)], a, extra={"score": float("nan")})
    assert_rows_equal(rows[len(a) :], b, extra={"label": -1})


# --- sizes --------------------------------------------------------------------------------


@MODES
def test_mixed_sizes_with_frame_size(tmp_path, streaming):
    root = mixed_size_root(tmp_path / "mixed")
    ds = _load(streaming, data_dir=str(root), split="train", window_length=5, frame_size=(20, 28))
    assert ds.features["video"].shape == (5, 20, 28, 3)
    assert_rows_equal(ds, core_samples(root, window_length=5, frame_size=(20, 28)))


def test_mixed_sizes_without_frame_size(tmp_path):
    root = mixed_size_root(tmp_path / "mixed")
    with pytest.raises(ValueError, match=r"differ in size .*frame_size=\(H, W\)"):
        _load(False, data_dir=str(root), window_length=5)


def test_roots_of_different_sizes_need_frame_size(tmp_path):
    hf_lvf.write.write_frames(
        tmp_path / "d" / "train", [("a", iter(np.zeros((4, 8, 8, 3), np.uint8)), None)]
    )
    hf_lvf.write.write_frames(
        tmp_path / "d" / "test", [("b", iter(np.zeros((4, 8, 6, 3), np.uint8)), None)]
    )
    with pytest.raises(ValueError, match=r"roots of this dataset .*8x6, 8x8.*frame_size"):
        _load(True, data_dir=str(tmp_path / "d"), window_length=2)


# --- arguments ------------------------------------------------------------------------------


@MODES
def test_missing_data_is_a_clear_error(streaming, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a working directory with files that a glob would find
    (tmp_path / "train.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match=r"needs data_dir= .* or data_files="):
        _load(streaming, window_length=4)


def test_data_dir_without_roots(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(RootNotFoundError, match="is not a lance-video-frames root"):
        _load(False, data_dir=str(tmp_path / "empty"))


def test_data_files_without_metadata(data_dir):
    with pytest.raises(RootNotFoundError, match=r"split 'train' .* hold no _metadata.json"):
        _load(False, data_files={"train": str(data_dir / "train" / "data" / "*")})


def test_bad_split_folder_name(tmp_path):
    hf_lvf.write.write_frames(
        tmp_path / "d" / "bad-name", [("a", iter(np.zeros((4, 8, 8, 3), np.uint8)), None)]
    )
    with pytest.raises(ValueError, match="not a valid split name"):
        _load(False, data_dir=str(tmp_path / "d"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window_length": 0}, r"window_length must be >= 1, got 0"),
        ({"frame_skip": -1}, r"frame_skip must be >= 0, got -1"),
        ({"hop_size": 1.5}, r"hop_size must be an integer >= 1, got 1.5"),
        ({"min_video_frames": -2}, r"min_video_frames must be >= 0, got -2"),
        ({"frame_size": (0, 4)}, r"frame_size must be a pair of positive integers"),
        ({"shard_windows": 0}, r"shard_windows must be an integer >= 1, got 0"),
    ],
)
def test_bad_config_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HfLvfConfig(**kwargs)


def test_config_is_keyword_only():
    with pytest.raises(TypeError):
        HfLvfConfig("default", None, None, None, None, 4)


def test_builder_reads_no_lance_in_this_process(data_dir):
    # Load in both modes and look at the datasets; no frame is read, so Lance stays closed.
    out = run_script(
        f"""
        import json, datasets, hf_lvf, hf_lvf.processes as processes
        data_dir = {str(data_dir)!r}
        m = datasets.load_dataset("hf_lvf", data_dir=data_dir, window_length=2)
        s = datasets.load_dataset("hf_lvf", data_dir=data_dir, window_length=2, streaming=True)
        sizes = {{k: len(v) for k, v in m.items()}}
        shards = {{k: v.num_shards for k, v in s.items()}}
        print(json.dumps([processes._lance_opened_by_pid, sizes, shards]))
        """,
        HF_DATASETS_CACHE=str(data_dir.parent / "cache-no-lance"),
    )
    opened, sizes, shards = out
    assert opened is None
    assert sizes == {
        split: len(core_samples(data_dir / split, window_length=2)) for split in SPLITS
    }
    assert set(shards) == set(SPLITS)


# --- the map-style cache ---------------------------------------------------------------------


def test_cache_key_follows_the_config(data_dir):
    four = _load(False, data_dir=str(data_dir), split="train", window_length=4)
    six = _load(False, data_dir=str(data_dir), split="train", window_length=6, hop_size=2)
    again = _load(False, data_dir=str(data_dir), split="train", window_length=4)
    assert four.cache_files != six.cache_files
    assert again.cache_files == four.cache_files
    assert_rows_equal(six, core_samples(data_dir / "train", window_length=6, hop_size=2))
    assert_rows_equal(again, core_samples(data_dir / "train", window_length=4))


def test_cache_key_follows_every_module_of_the_code(tmp_path):
    """The code hash that keys the cache changes with any module of hf_lvf (spans, fields,
    the plan...), not only with the ones a list named: a change would reuse a stale cache."""
    import shutil

    from hf_lvf.hf.builder import _code_hash

    package = tmp_path / "hf_lvf"
    shutil.copytree(Path(hf_lvf.__file__).parent, package, ignore=shutil.ignore_patterns("*.pyc"))
    assert _code_hash(package) == _code_hash()
    modules = sorted(package.rglob("*.py"))
    assert any(m.name == "spans.py" for m in modules)
    seen = {_code_hash(package)}
    for module in modules:
        text = module.read_text()
        module.write_text(text + "\n# changed\n")
        seen.add(_code_hash(package))
        module.write_text(text)
    assert len(seen) == len(modules) + 1
    assert _code_hash(package) == _code_hash()


def test_cache_holds_references_not_pixels(tmp_path):
    # 16-frame windows: a row is what identifies the window: its root's path (each reference
    # names its root) and under 256 bytes more (a window's pixels are 196,608 bytes).
    root = write_synthetic_root(
        tmp_path / "root", num_videos=5, num_frames=[40, 64, 23, 80, 30], frame_size=(64, 64)
    )
    ds = _load(False, data_dir=str(root), split="train", window_length=16, hop_size=2)
    assert len(ds) == 13 + 25 + 4 + 33 + 8
    on_disk = sum(os.path.getsize(f["filename"]) for f in ds.cache_files)
    assert on_disk / len(ds) < 256 + len(str(root))
    assert ds.data.nbytes / len(ds) < 140 + len(str(root))
    video = ds.features["video"]
    assert isinstance(video, WindowVideo)
    assert video.array == datasets.Array4D((16, 64, 64, 3), "uint8")
    assert video.roots == ()  # each reference names its root
    assert ds.cast_column("video", WindowVideo(decode=False))[0]["video"]["root"] == str(root)


def test_features_name_the_decoded_array(data_dir):
    builder = datasets.load_dataset_builder("hf_lvf", data_dir=str(data_dir), window_length=4)
    video = builder.info.features["video"]
    assert video.shape == (4, 32, 48, 3)
    assert "Array4D(shape=(4, 32, 48, 3), dtype='uint8')" in repr(video)
    # The features survive the JSON and YAML round trips of dataset_info.json and the card.
    features = builder.info.features
    assert datasets.Features.from_dict(features.to_dict()) == features
    assert datasets.Features._from_yaml_list(features._to_yaml_list()) == features


def test_rows_slices_and_formats(data_dir):
    ds = _load(False, data_dir=str(data_dir), split="test", **PARAMS)
    want = core_samples(data_dir / "test", **PARAMS)
    assert_rows_equal([ds[i] for i in range(len(ds))], want)
    batch = ds[1:4]
    for k, sample in enumerate(want[1:4]):
        np.testing.assert_array_equal(batch["video"][k], sample["video"])
        assert batch["sample_idx"][k] == sample["sample_idx"]

    row = ds.with_format("numpy")[2]
    assert row["video"].dtype == np.uint8
    np.testing.assert_array_equal(row["video"], want[2]["video"])
    stacked = ds.with_format("numpy")[0:3]["video"]
    assert stacked.dtype == np.uint8 and stacked.shape == (3, *want[0]["video"].shape)
    assert ds.with_format("numpy")[0]["frame_indices"].tolist() == want[0]["frame_indices"].tolist()

    torch = pytest.importorskip("torch")
    trow = ds.with_format("torch")[2]
    assert trow["video"].dtype == torch.uint8
    np.testing.assert_array_equal(trow["video"].numpy(), want[2]["video"])
    tbatch = ds.with_format("torch")[0:3]["video"]
    assert tbatch.dtype == torch.uint8 and tuple(tbatch.shape) == (3, *want[0]["video"].shape)
    column = ds.with_format("torch", columns=["video"])["video"][:2]
    assert column.dtype == torch.uint8
    # A dtype the caller asks for applies to video too.
    as_float = ds.with_format("numpy", dtype=np.float32)[0]["video"]
    assert as_float.dtype == np.float32


@pytest.fixture
def lance_reads(monkeypatch) -> list[int]:
    """How many rows each Lance read of this test asks for, in order."""
    from hf_lvf.frames import FrameReader

    reads: list[int] = []
    original = FrameReader.read

    def read(self, rows):
        reads.append(len(rows))
        return original(self, rows)

    monkeypatch.setattr(FrameReader, "read", read)
    return reads


@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
def test_map_style_batches_are_one_read(data_dir, lance_reads, fmt):
    params = dict(window_length=4, hop_size=2)
    plain = _load(False, data_dir=str(data_dir), split="test", **params)
    ds = plain.with_format(fmt) if fmt else plain
    core = VideoWindows(data_dir / "test", **params)
    want = core.take(range(len(core)))
    indices = [5, 0, 6, 5, len(core) - 1, 2, 3]

    def pixels(value) -> np.ndarray:
        return value.numpy() if fmt == "torch" else np.asarray(value)

    for read in (lambda: ds[indices]["video"], lambda: ds[2:9]["video"]):
        lance_reads.clear()
        video = read()
        assert len(lance_reads) == 1  # the whole batch, each distinct frame once
        if fmt:  # one dense uint8 array (tensor): no second copy to stack the windows
            assert str(video.dtype).endswith("uint8") and len(video.shape) == 5
        else:
            assert all(v.dtype == np.uint8 for v in video)
    lance_reads.clear()
    batch = ds.__getitems__(indices)
    frames = {(want[i]["video_idx"], f) for i in indices for f in want[i]["frame_indices"]}
    # One read of the distinct frames (less the ones the previous read left in the cache).
    assert len(lance_reads) == 1 and len(frames) - 4 <= lance_reads[0] <= len(frames)
    assert [row["sample_idx"] for row in batch] == [want[i]["sample_idx"] for i in indices]
    for row, i in zip(batch, indices, strict=True):
        video = pixels(row["video"])
        assert video.dtype == np.uint8
        np.testing.assert_array_equal(video, want[i]["video"])
    # Writing into one window of a batch leaves the others (and later reads) alone.
    first, second = ds.__getitems__([0, 1])
    pixels(first["video"])[...] = 0
    np.testing.assert_array_equal(pixels(second["video"]), want[1]["video"])
    np.testing.assert_array_equal(pixels(ds[0]["video"]), want[0]["video"])


@pytest.mark.parametrize("fmt", [None, "numpy", "torch"])
def test_map_style_iteration_reads_ahead(tmp_path, lance_reads, fmt):
    root = long_videos_root(tmp_path / "long", num_frames=60)
    params = dict(window_length=4, hop_size=3)
    plain = _load(False, data_dir=str(root), split="train", **params)
    ds = plain.with_format(fmt) if fmt else plain
    want = core_samples(root, **params)
    lance_reads.clear()
    count = 0
    for row, sample in zip(ds, want, strict=True):
        video = row["video"].numpy() if fmt == "torch" else np.asarray(row["video"])
        assert video.dtype == np.uint8 and int(row["sample_idx"]) == sample["sample_idx"]
        np.testing.assert_array_equal(video, sample["video"])
        video[...] = 0  # the caller's own: later rows must not see it
        count += 1
    assert count == len(want)
    # Rows in order are read 8 windows at a time (a few more reads where a video ends).
    assert len(lance_reads) <= len(want) // 8 + 6
    # Random rows are read one by one, never from a stale read-ahead.
    lance_reads.clear()
    for i in [5, 3, 4, 5, 6, 7, 2]:
        np.testing.assert_array_equal(np.asarray(plain[i]["video"]), want[i]["video"])
    assert len(lance_reads) >= 5


def test_map_style_batch_over_several_roots(tmp_path, lance_reads):
    parent = _two_roots(tmp_path)
    ds = _load(False, data_dir=str(parent), split="train", window_length=2, frame_size=(16, 16))
    want = core_samples(parent / "train" / "a", window_length=2, frame_size=(16, 16))
    want += core_samples(parent / "train" / "b", window_length=2, frame_size=(16, 16))
    indices = [len(want) - 1, 0, 6, 1]
    lance_reads.clear()
    batch = ds.with_format("numpy")[indices]["video"]
    assert len(lance_reads) == 2  # one read per root
    assert batch.dtype == np.uint8
    for video, i in zip(batch, indices, strict=True):
        np.testing.assert_array_equal(video, want[i]["video"])


def test_references_without_decoding(data_dir):
    ds = _load(False, data_dir=str(data_dir), split="test", window_length=4, hop_size=3)
    refs = ds.cast_column("video", WindowVideo(decode=False))
    want = core_samples(data_dir / "test", window_length=4, hop_size=3)
    root_id = refs[0]["video"]["root_id"]
    assert isinstance(root_id, int) and root_id > 0
    for row, sample in zip(refs, want, strict=True):
        assert row["video"] == {
            "root": str(data_dir / "test"),
            "root_id": root_id,
            "lance_version": 1,
            "video_idx": sample["video_idx"],
            "start_frame": sample["start_frame"],
        }
    # ... and casting back decodes them again.
    back = refs.cast_column("video", ds.features["video"])
    np.testing.assert_array_equal(back[3]["video"], want[3]["video"])


@pytest.mark.parametrize("batched", [False, True])
def test_map_returning_video_unchanged_writes_no_pixels(data_dir, batched):
    ds = _load(False, data_dir=str(data_dir), split="train", **PARAMS)
    means = []

    def touch(example):
        means.append(np.mean(example["video"]))
        return example

    mapped = ds.map(touch, batched=batched, batch_size=5)
    assert means  # video was read
    assert isinstance(mapped.features["video"], WindowVideo)
    assert mapped.data.nbytes <= ds.data.nbytes
    assert_rows_equal(mapped, core_samples(data_dir / "train", **PARAMS))

    numpy_mapped = ds.with_format("numpy").map(lambda b: b, batched=True, batch_size=4)
    assert numpy_mapped.data.nbytes <= ds.data.nbytes


def test_map_returning_the_video_costs_a_numpy_map_and_new_fields_read_nothing(
    data_dir, monkeypatch
):
    # docs/guides/datasets.md: returning the video reads each window (as with_format("numpy")
    # does) and stores the same references; returning only new fields reads no window.
    ds = _load(False, data_dir=str(data_dir), split="train", **PARAMS)
    windows_read = []
    read = VideoWindows._read
    monkeypatch.setattr(
        VideoWindows, "_read", lambda self, idx: windows_read.append(len(idx)) or read(self, idx)
    )

    def returns_video(row):
        return {"video": row["video"], "y": row["label"] + 1}

    fresh = {"load_from_cache_file": False}
    as_default = ds.map(returns_video, **fresh)
    default_reads, windows_read[:] = sum(windows_read), []
    as_numpy = ds.with_format("numpy").map(returns_video, **fresh)
    assert sum(windows_read) == default_reads >= len(ds)
    windows_read[:] = []
    new_only = ds.map(lambda row: {"y": row["label"] + 1}, **fresh)
    assert windows_read == []  # the function never touched row["video"]

    def refs(d):
        return d.cast_column("video", WindowVideo(decode=False))["video"]

    # (Its root's windows have the same pixels as the other tests' roots: each row still
    # names its own root.)
    assert refs(as_default) == refs(as_numpy.with_format(None)) == refs(new_only) == refs(ds)
    want = core_samples(data_dir / "train", **PARAMS)
    assert new_only["y"] == [int(w["label"]) + 1 for w in want]
    assert_rows_equal(new_only.remove_columns("y"), want)


def test_map_changing_pixels(data_dir):
    ds = _load(False, data_dir=str(data_dir), split="test", window_length=2)
    with pytest.raises(TypeError, match="stores references to windows"):
        ds.map(lambda x: {"video": x["video"] // 2}, features=ds.features)
    # Into a new column they are plain data.
    darker = ds.map(lambda x: {"darker": x["video"] // 2})
    np.testing.assert_array_equal(np.asarray(darker[1]["darker"]), ds[1]["video"] // 2)


def test_references_out_of_range(data_dir):
    ds = _load(False, data_dir=str(data_dir), split="test", window_length=4)
    feature = ds.features["video"]
    reference = ds.cast_column("video", WindowVideo(decode=False))[0]["video"]
    with pytest.raises(ValueError, match=r"is not a window of root .* window_length=4"):
        feature.decode_example({**reference, "start_frame": 999})
    with pytest.raises(
        hf_lvf.errors.LayoutError, match=r"stored by an older hf_lvf \(a root index"
    ):
        feature.decode_example({"root": 0, "video_idx": 0, "start_frame": 0})
    with pytest.raises(TypeError, match="needs the keys"):
        feature.decode_example({"root": reference["root"], "video_idx": 0, "start_frame": 0})
    with pytest.raises(ValueError, match="has no array to decode with"):
        WindowVideo().decode_example(reference)


# --- streaming ----------------------------------------------------------------------------------


def test_streaming_shards_are_plain_window_ranges(tmp_path):
    root = long_videos_root(tmp_path / "long")
    ds = _load(True, data_dir=str(root), split="train", window_length=8, hop_size=2)
    assert ds.num_shards >= 8
    shards = ds._ex_iterable.kwargs["shards"]
    assert isinstance(shards, list)
    assert all(type(s) is tuple and all(type(x) is int for x in s) for s in shards)
    covered = [i for _, _, lo, hi in shards for i in range(lo, hi)]
    assert covered == list(range(len(hf_lvf.VideoWindows(root, window_length=8, hop_size=2))))
    assert ds.features["video"] == datasets.Array4D((8, 8, 8, 3), "uint8")


def test_streaming_resumes_at_the_exact_window(data_dir):
    kwargs = {"data_dir": str(data_dir), "split": "train", "shard_windows": 3, **PARAMS}
    want = [s["sample_idx"] for s in core_samples(data_dir / "train", **PARAMS)]
    for stop in (1, 4, 7):
        ds = _load(True, **kwargs)
        it = iter(ds)
        head = [next(it)["sample_idx"] for _ in range(stop)]
        state = ds.state_dict()
        resumed = _load(True, **kwargs)
        resumed.load_state_dict(state)
        assert head + [s["sample_idx"] for s in resumed] == want


def test_streaming_shuffle_and_epochs(data_dir):
    ds = _load(True, data_dir=str(data_dir), split="train", shard_windows=2, **PARAMS)
    want = {s["sample_idx"]: s["video"] for s in core_samples(data_dir / "train", **PARAMS)}
    n = len(want)
    shuffled = ds.shuffle(seed=3, buffer_size=4)
    first = [s["sample_idx"] for s in shuffled]
    assert sorted(first) == list(range(n)) and first != list(range(n))
    assert [s["sample_idx"] for s in ds.shuffle(seed=3, buffer_size=4)] == first
    orders = []
    # datasets reads the shards of a shuffled stream on threads of its own, at once.
    for epoch in range(1, 9):
        shuffled.set_epoch(epoch)
        orders.append([])
        for sample in shuffled:
            np.testing.assert_array_equal(sample["video"], want[sample["sample_idx"]])
            orders[-1].append(sample["sample_idx"])
        assert sorted(orders[-1]) == list(range(n))
    assert orders[0] != first


def test_streaming_split_by_node(data_dir):
    ds = _load(True, data_dir=str(data_dir), split="train", shard_windows=2, **PARAMS)
    seen = []
    for rank in range(2):
        node = datasets.distributed.split_dataset_by_node(ds, rank=rank, world_size=2)
        seen += [s["sample_idx"] for s in node]
    assert sorted(seen) == list(range(len(core_samples(data_dir / "train", **PARAMS))))
