"""Ray front end on one local Ray of 2 CPUs (the session's ``ray_cluster``): windows as a Ray
Dataset (every window once, pixels of the core view, at any block count and order), faults
(a read task's worker killed mid-read, a store fault), and convert_videos on Ray tasks.

What runs in Ray workers (the fault-injecting read tasks, the dying conversion) is defined
at this module's top level: the workers import it (``ray_cluster`` puts tests/ on their path).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import time
from pathlib import Path

import lance
import numpy as np
import pytest
from _loading import crc
from _roots import assert_same_value, hf_root, make_frames, set_spans, write_foreign_root
from _videos import write_video

import hf_lvf
from hf_lvf import VideoWindows
from hf_lvf.convert import convert_videos
from hf_lvf.errors import FrameDecodeError, StoreError
from hf_lvf.plan import window_ranges
from hf_lvf.ray import RayExecutor, frame_table, read_windows

pytest.importorskip("ray")

# 40 videos of 40..79 frames of 8x12: 2,260 windows of 4 frames with hop 1.
LENGTHS = [40 + (7 * i) % 40 for i in range(40)]
PARAMS = {"window_length": 4, "hop_size": 1}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return hf_root(tmp_path_factory.mktemp("ray") / "root", LENGTHS, frame_size=(8, 12))


@pytest.fixture(scope="module")
def want(root) -> dict[int, int]:
    """``sample_idx -> crc32`` of every window of the core view."""
    return {s["sample_idx"]: crc(s["video"]) for s in VideoWindows(root, **PARAMS)}


def _read(ds) -> list[tuple[int, int]]:
    """``(sample_idx, crc32 of video)`` of every row, in the order Ray gave them."""
    out = []
    for batch in ds.iter_batches(batch_size=256, batch_format="numpy"):
        assert batch["video"].dtype == np.uint8
        out += [(int(i), crc(v)) for i, v in zip(batch["sample_idx"], batch["video"], strict=True)]
    return out


def test_window_ranges_cut_at_video_boundaries():
    first = np.array([0, 30, 35, 70, 100])
    assert window_ranges(first, 3).tolist() == [0, 35, 70, 100]  # 33 and 67 move to videos
    assert window_ranges(first, 10).tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert window_ranges(first, 1000).tolist() == list(range(101))  # one a window at most
    assert window_ranges(np.array([0, 0, 4, 4]), 2).tolist() == [0, 2, 4]
    with pytest.raises(ValueError, match="num_ranges must be an integer >= 1, got 0"):
        window_ranges(first, 0)


@pytest.mark.parametrize("blocks", [4, 16, 64, "shuffled"])
def test_every_window_once_with_the_core_pixels(ray_cluster, root, want, blocks):
    assert len(want) == 2260
    if blocks == "shuffled":
        ds = read_windows(root, **PARAMS, override_num_blocks=16).randomize_block_order(seed=0)
    else:
        ds = read_windows(root, **PARAMS, override_num_blocks=blocks)
    got = _read(ds)
    assert len(got) == len(want)  # none twice
    assert dict(got) == want  # every one, with its own pixels
    if blocks == "shuffled":
        assert [i for i, _ in got] != sorted(want)


def test_read_tasks_cover_ranges_cut_at_videos(ray_cluster, root):
    from hf_lvf.engines.ray_source import WindowsDatasource

    windows = VideoWindows(root, **PARAMS)
    tasks = WindowsDatasource(windows).get_read_tasks(16)
    rows = [t.metadata.num_rows for t in tasks]
    assert sum(rows) == len(windows) and len(tasks) == 16
    bounds = np.cumsum([0, *rows])
    assert np.isin(bounds, windows.plan.first_window).all()  # every cut between two videos
    assert tasks[0].metadata.size_bytes == rows[0] * (4 * 8 * 12 * 3 + 256)


def _pixels_address(block) -> int:
    """Where the pixels of a block's ``video`` column are (its one chunk's data buffer)."""
    (chunk,) = block["video"].chunks
    return chunk.buffers()[-1].address


def test_blocks_pass_rays_target_alone_and_reuse_only_free_memory(root, want):
    """Each block is one window past Ray's target block size, so Ray's read operator hands it
    on as one chunk (consumers get numpy without a copy); blocks held keep their pixels while
    later blocks are read (and read ahead), and a worker reuses the memory of blocks it no
    longer holds."""
    import copy
    import pickle

    from ray.data.context import DataContext

    from hf_lvf.engines.ray_source import WindowsDatasource, read_range

    windows = VideoWindows(root, **PARAMS)
    context = copy.copy(DataContext.get_current())
    context.target_max_block_size = 50 * (4 * 8 * 12 * 3 + 256)
    (task,) = WindowsDatasource(windows).get_read_tasks(1, data_context=context)
    held = list(task())  # every block held at once
    assert [b.num_rows for b in held] == [51] * (len(windows) // 51) + [len(windows) % 51]
    assert all(b["video"].num_chunks == 1 for b in held)
    assert len({_pixels_address(b) for b in held}) == len(held)
    rows = [
        (int(i), crc(v))
        for b in held
        for i, v in zip(b["sample_idx"].to_numpy(), _numpy(b)["video"], strict=True)
    ]
    assert rows == sorted(want.items())

    addresses = []
    for block in read_range(pickle.dumps(windows), 0, 8 * 51, rows_per_block=51):
        addresses.append(_pixels_address(block))  # the loop holds one block at a time
        assert [crc(v) for v in _numpy(block)["video"]] == [
            want[int(i)] for i in block["sample_idx"].to_numpy()
        ]
    # At most three arrays in turn: the block the loop holds, the one handed on next, the one
    # read ahead while the loop runs (two when the read ahead has not started yet as a block
    # is let go, which the machine's load decides: 2 of 3 runs on a loaded machine).
    assert len(addresses) == 8 and len(set(addresses)) <= 3


def _numpy(block) -> dict:
    from ray.data.block import BlockAccessor

    return BlockAccessor.for_block(block).to_batch_format("numpy")


def test_own_seed_gives_every_window_once_in_a_new_order_per_epoch(ray_cluster, root, want):
    blocks = []
    for epoch in (0, 1, 1):
        ds = read_windows(root, **PARAMS, seed=7, epoch=epoch, override_num_blocks=8)
        got = _read(ds)
        assert len(got) == len(want) and dict(got) == want
        assert [i for i, _ in got] != sorted(want)
        # Ray may hand the tasks' blocks over in any order, each block's rows as drawn.
        blocks.append(sorted(tuple(b["sample_idx"]) for b in ds.iter_batches(batch_size=None)))
    assert blocks[1] == blocks[2] and blocks[0] != blocks[1]
    assert all(list(block) != sorted(block) for block in blocks[0])  # rows shuffled in blocks


def test_own_seed_is_the_global_order_of_a_ddp_job(ray_cluster, root):
    """A Ray job and a DDP job on the same seed read the same global order (issue 47)."""
    from hf_lvf.read.orders import ShuffledOrder

    context = ray_cluster.data.DataContext.get_current()
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    try:
        for epoch in (0, 1):
            ds = read_windows(root, **PARAMS, seed=7, epoch=epoch, override_num_blocks=4)
            got = [int(row["sample_idx"]) for row in ds.iter_rows()]
            n = len(got)
            assert got == ShuffledOrder(seed=7).global_order(n, epoch).tolist()
    finally:
        context.execution_options.preserve_order = before


def test_iter_torch_batches_on_the_dataset_as_it_is(ray_cluster, root):
    """What a Ray Train user writes first: ``iter_torch_batches`` on ``read_windows`` as it
    comes. String columns (filename, the ``split`` metadata) are left out unless asked for,
    as Ray's own datasources leave out paths: strings make no tensors."""
    torch = pytest.importorskip("torch")
    ds = read_windows(root, window_length=3, hop_size=5, override_num_blocks=4)
    batches = list(ds.iter_torch_batches(batch_size=4))
    first = batches[0]
    assert first["video"].dtype == torch.uint8
    assert tuple(first["video"].shape) == (4, 3, 8, 12, 3)
    assert tuple(first["frame_indices"].shape) == (4, 3)
    assert first["frame_indices"].dtype == torch.int32  # the sample's dtype, as in its features
    assert set(first) == {
        "video", "video_idx", "video_id", "start_frame", "frame_indices", "sample_idx", "label"
    }  # fmt: skip
    view = VideoWindows(root, window_length=3, hop_size=5)
    got = [int(i) for b in batches for i in b["sample_idx"]]
    assert sorted(got) == list(range(len(view)))  # every window once
    k = got.index(9)
    batch = batches[k // 4]
    np.testing.assert_array_equal(batch["video"][k % 4].numpy(), view[9]["video"])


def test_string_columns_when_asked_for(ray_cluster, root):
    names = [
        "video", "video_idx", "video_id", "filename", "start_frame", "frame_indices",
        "sample_idx", "label", "split",
    ]  # fmt: skip
    ds = read_windows(root, window_length=3, hop_size=5, override_num_blocks=4)
    assert ds.schema().names == [n for n in names if n not in ("filename", "split")]
    paths = read_windows(root, window_length=3, hop_size=5, include_paths=True)
    assert paths.schema().names == [n for n in names if n != "split"]
    text = read_windows(root, window_length=3, hop_size=5, include_text=True)
    assert text.schema().names == [n for n in names if n != "filename"]
    both = read_windows(root, window_length=3, hop_size=5, include_paths=True, include_text=True)
    assert both.schema().names == names
    row = both.filter(lambda r: r["sample_idx"] == 9).take_all()[0]
    sample = VideoWindows(root, window_length=3, hop_size=5)[9]
    for name, value in sample.items():
        if name == "video":
            np.testing.assert_array_equal(row["video"], value)
        else:
            assert_same_value(row[name], value, name)
    assert row["video_id"] == sample["video_idx"]  # hf_root numbers ids as indices
    with pytest.raises(TypeError, match="include_paths must be True or False, got 1"):
        read_windows(root, include_paths=1)


def test_lazy_until_run_and_errors_keep_their_type(ray_cluster, tmp_path):
    frames = make_frames(6, 8, 8, seed=0)
    root = write_foreign_root(
        tmp_path / "bad", [{"frames": frames, "path": "a.mp4"}], blobs={(0, 4): b"not webp"}
    )
    ds = read_windows(root, window_length=2, override_num_blocks=2)  # reads no frame
    assert len(ds.limit(2).take_all()) == 2  # the first task's windows decode
    with pytest.raises(FrameDecodeError, match="frame 4 of video 0"):
        ds.take_all()


@pytest.mark.parametrize("windows_in", ["videos", "spans"])
def test_per_frame_and_span_fields_are_columns_of_the_sample_values(
    ray_cluster, tmp_path, windows_in
):
    """A root with per-frame fields (a struct's field, fixed-size lists, bools, strings) and
    captioned spans of mixed keys: every row Ray gives equals the core view's sample, key by
    key, pixels too."""
    from _field_roots import write_field_root

    root = tmp_path / "fields"
    write_field_root(root)
    reach = {"start_frame": 0, "end_frame": 4, "caption": "reach"}
    grasp = {"start_frame": 1, "end_frame": 5, "caption": "grasp", "score": 0.5}
    set_spans(
        root, {0: [reach, grasp], 2: [{"start_frame": 2, "end_frame": 7, "caption": "place"}]}
    )
    params = {"window_length": 2, "hop_size": 1, "windows_in": windows_in}
    view = VideoWindows(root, **params)
    strings = {"include_paths": True, "include_text": True}
    rows = read_windows(root, **params, **strings, override_num_blocks=2).take_all()
    assert len(rows) == len(view) and len(view) > 4
    for row in rows:
        sample = view[int(row["sample_idx"])]
        assert set(row) == {*sample, "video_id"}
        for name, value in sample.items():
            if name == "video":
                np.testing.assert_array_equal(row["video"], value)
            else:
                assert_same_value(row[name], value, name)
                if isinstance(value, np.ndarray):  # per-frame fields in their own dtype
                    assert np.asarray(row[name]).dtype == value.dtype, name
    names = read_windows(root, **params, **strings).schema().names
    assert {"observation.state", "action", "note", "done"} <= set(names)
    if windows_in == "spans":
        assert {"caption", "span_idx"} <= set(names)
    # Without strings (the default), the string per-frame field and the caption are left
    # out, and the rest makes torch batches.
    numeric = read_windows(root, **params)
    assert set(numeric.schema().names) == set(names) - {"filename", "note", "caption"}
    assert len(list(numeric.iter_torch_batches(batch_size=3))) > 0


@pytest.mark.hub
def test_hf_root_reads_on_ray_workers(ray_cluster, hub, tmp_path):
    local = hf_root(tmp_path / "root", (12, 3, 20, 9), frame_size=(8, 12))
    hf_lvf.push_to_hub(local, "org/ray-clips", token=hub.token, private=True)
    uri = "hf://datasets/org/ray-clips"
    ds = read_windows(uri, token=hub.token, override_num_blocks=3, window_length=4, hop_size=2)
    want = {s["sample_idx"]: crc(s["video"]) for s in VideoWindows(local, window_length=4,
                                                                      hop_size=2)}  # fmt: skip
    got = _read(ds)
    assert len(got) == len(want) and dict(got) == want  # the token reached the workers


@pytest.mark.s3
def test_s3_root_reads_on_ray_workers(ray_cluster, s3, tmp_path):
    local = hf_root(tmp_path / "clips", (12, 3, 20, 9), frame_size=(8, 12))
    uri = s3.upload(local, s3.new_bucket(), "clips")
    ds = read_windows(uri, storage_options=s3.options(), override_num_blocks=3, window_length=4)
    want = {s["sample_idx"]: crc(s["video"]) for s in VideoWindows(local, window_length=4)}
    got = _read(ds)
    assert len(got) == len(want) and dict(got) == want


def test_view_options_are_checked_before_ray_runs(root):
    with pytest.raises(ValueError, match="hop_size must be >= 1, got 0"):
        read_windows(root, hop_size=0)
    with pytest.raises(ValueError, match="override_num_blocks must be an integer >= 1, got 0"):
        read_windows(root, override_num_blocks=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'hop'"):
        read_windows(root, hop=2)
    with pytest.raises(TypeError, match=r"takes no view options, got \['hop_size'\]"):
        read_windows(VideoWindows(root), hop_size=2)


# --- results back into the root -----------------------------------------------------------


def _frame_means(batch: dict) -> dict:
    """A per-frame score (each frame's mean pixel), beside the keys frame_table joins on."""
    keys = ("video_id", "frame_indices", "sample_idx")
    return {k: batch[k] for k in keys} | {"score": batch["video"].mean(axis=(2, 3, 4))}


def test_scores_from_map_batches_become_a_frame_column(ray_cluster, tmp_path):
    root = hf_root(tmp_path / "root", (12, 3, 20, 9), frame_size=(8, 12))
    before = json.loads((root / "_metadata.json").read_text())["lance_version"]
    data_files = {p.name: p.stat().st_size for p in (root / "data").iterdir()}
    old_frames = lance.dataset(str(root), version=before).to_table()
    scored = read_windows(root, window_length=4, hop_size=3).map_batches(_frame_means)
    with pytest.raises(ValueError, match=r"frame 10 of video_id 0 \('clip_0'\) is in no window"):
        frame_table(scored, ["score"], root=root)  # windows of 4 with hop 3 end at frame 9
    table = frame_table(scored, ["score"], root=root, fill=-1.0)
    assert table.num_rows == 44 and table.column_names == ["video_id", "frame_idx", "score"]
    hf_lvf.write.add_frame_columns(root, table)

    after = json.loads((root / "_metadata.json").read_text())["lance_version"]
    assert after > before
    new = lance.dataset(str(root), version=after).to_table()
    frames = VideoWindows(root, window_length=1)  # every frame of the long-enough videos
    want = {(s["video_idx"], s["start_frame"]): s["video"].mean() for s in frames}
    for video_id, frame_idx, score in zip(*new.select(["video_id", "frame_idx", "score"])
                                          .to_pydict().values(), strict=True):  # fmt: skip
        # Frames past the last window (hop 3) and clip_1 (shorter than one) have no score.
        in_window = video_id != 1 and frame_idx < {0: 10, 2: 19, 3: 7}[video_id]
        assert score == (want[(video_id, frame_idx)] if in_window else -1.0)
    assert new.select(old_frames.column_names).equals(old_frames)  # frames as they were
    for name, size in data_files.items():  # and their files untouched
        assert (root / "data" / name).stat().st_size == size
    assert lance.dataset(str(root), version=before).to_table().equals(old_frames)
    assert "score" not in lance.dataset(str(root), version=before).schema.names
    # The column reads back through the core view as a per-frame field of every window.
    keys = new.select(["video_id", "frame_idx"]).to_pydict().values()
    written = dict(zip(zip(*keys, strict=True), new.column("score").to_pylist(), strict=True))
    view = VideoWindows(root, window_length=4, hop_size=3)
    assert "score" in view.features
    for sample in view:
        video_id = int(view.layout.ids[sample["video_idx"]])
        want_scores = [written[(video_id, int(f))] for f in sample["frame_indices"]]
        assert sample["score"].tolist() == want_scores
    assert dict(_read(read_windows(root, window_length=4, hop_size=3))) == {
        s["sample_idx"]: crc(s["video"]) for s in VideoWindows(root, window_length=4, hop_size=3)
    }


def test_frame_table_without_root_and_window_values(ray_cluster, tmp_path):
    root = hf_root(tmp_path / "root", (6, 7), frame_size=(8, 8))
    ds = read_windows(root, window_length=3, hop_size=2)  # overlapping: frame 2 in 2 windows
    per_window = ds.map_batches(lambda b: {**b, "emb": np.stack([b["sample_idx"]] * 2, 1)})
    table = frame_table(per_window, ["emb"])
    assert table.column("video_id").to_pylist() == [0] * 5 + [1] * 7
    assert table.column("frame_idx").to_pylist() == [0, 1, 2, 3, 4] + list(range(7))
    # A frame takes the value of its first window; the embedding is a fixed-size list.
    assert table.column("emb").to_pylist()[:5] == [[0, 0]] * 3 + [[1, 1]] * 2
    with pytest.raises(ValueError, match="no column 'sample_idx'"):
        frame_table(ds.drop_columns(["sample_idx"]), ["video_idx"])


# --- faults: what Ray workers run, and the tests -----------------------------------------


def _faulty(read, folder: str, kind: str):
    """``read()``'s blocks; the first task to get here yields one block, then (once per
    ``folder``) its worker waits to be killed (``kind="kill"``) or raises a ``StoreError``."""
    blocks = iter(read())
    yield next(blocks)
    try:
        os.mkdir(os.path.join(folder, "faulted"))  # the one task, the one attempt
    except FileExistsError:
        yield from blocks
        return
    if kind == "store":
        raise StoreError("GET data/0.lance: connection reset (injected)")
    Path(folder, "pid.tmp").write_text(str(os.getpid()))
    os.replace(os.path.join(folder, "pid.tmp"), os.path.join(folder, "pid"))
    time.sleep(120)  # killed by the test long before


def _faulty_datasource(windows: VideoWindows, folder: Path, kind: str):
    from hf_lvf.engines.ray_source import WindowsDatasource

    class Faulty(WindowsDatasource):
        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            tasks = super().get_read_tasks(parallelism, per_task_row_limit, data_context)
            for task in tasks:
                task._read_fn = functools.partial(_faulty, task._read_fn, str(folder), kind)
            return tasks

    return Faulty(windows)


@pytest.fixture
def small_blocks(ray_cluster):
    """Blocks of 32 windows of the test root: a task yields several."""
    context = ray_cluster.data.DataContext.get_current()
    before = context.target_max_block_size
    context.target_max_block_size = 32 * (4 * 8 * 12 * 3 + 256)
    yield
    context.target_max_block_size = before


def test_killed_worker_mid_read_loses_and_repeats_no_window(
    ray_cluster, small_blocks, root, want, tmp_path
):
    import threading

    def kill_when_told() -> None:  # the worker says its pid once it has yielded a block
        pid_file = tmp_path / "pid"
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        assert pid != os.getpid()
        os.kill(pid, signal.SIGKILL)  # a Ray worker process, in the middle of its task
        (tmp_path / "killed").touch()

    killer = threading.Thread(target=kill_when_told, daemon=True)
    killer.start()
    ds = ray_cluster.data.read_datasource(
        _faulty_datasource(VideoWindows(root, **PARAMS), tmp_path, "kill"), override_num_blocks=4
    )
    got = _read(ds)
    killer.join(timeout=5)
    assert (tmp_path / "killed").exists()  # the kill happened during the read
    assert len(got) == len(want)
    assert dict(got) == want


def test_store_fault_is_retried_and_yields_windows_once(
    ray_cluster, small_blocks, root, want, tmp_path
):
    ds = ray_cluster.data.read_datasource(
        _faulty_datasource(VideoWindows(root, **PARAMS), tmp_path, "store"),
        override_num_blocks=4,
        ray_remote_args={"retry_exceptions": [StoreError]},
    )
    got = _read(ds)
    assert (tmp_path / "faulted").exists()
    assert len(got) == len(want) and dict(got) == want


# --- convert_videos on Ray tasks ----------------------------------------------------------


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("ray_clips")
    return [write_video(folder / f"v_{i}.mp4", 6 + i % 3, (32, 48), seed=i) for i in range(5)]


def _table(root: Path):
    meta = json.loads((root / "_metadata.json").read_text())
    return lance.dataset(str(root), version=meta["lance_version"]).to_table(), meta


def _same_root(got: Path, want: Path) -> None:
    (table, meta), (want_table, want_meta) = _table(got), _table(want)
    assert table.equals(want_table)  # the frame bytes, so the pixels, exactly
    assert {k: v for k, v in meta.items() if k != "lance_version"} == {
        k: v for k, v in want_meta.items() if k != "lance_version"
    }


def test_ray_conversion_writes_the_local_root(ray_cluster, tmp_path, clips):
    summary = convert_videos(clips, tmp_path / "ray", executor=RayExecutor(), progress=False)
    assert summary.num_videos == len(clips)
    convert_videos(clips, tmp_path / "local", workers=0, progress=False)
    _same_root(tmp_path / "ray", tmp_path / "local")
    assert VideoWindows(tmp_path / "ray", window_length=3)[0]["video"].shape == (3, 32, 48, 3)


def _die_mid_video(folder: str, fn, task, **kwargs):
    """``fn(task)``; the task of video 1 kills its worker after its first batch of frames (once
    per ``folder``)."""

    def on_batch(frames: int) -> None:
        if task.video_id == 1:
            try:
                os.mkdir(os.path.join(folder, "died"))
            except FileExistsError:
                return
            os.kill(os.getpid(), signal.SIGKILL)

    return fn(task, on_batch=on_batch)


class _Dying(RayExecutor):
    def __init__(self, folder: Path, **options):
        super().__init__(**options)
        self._folder = str(folder)

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(_die_mid_video, self._folder, fn, *args, **kwargs)


def test_killed_conversion_task_leaves_no_root(ray_cluster, tmp_path, clips):
    marks = tmp_path / "marks"
    marks.mkdir()
    with pytest.raises(ray_cluster.exceptions.WorkerCrashedError):
        convert_videos(clips, tmp_path / "root", executor=_Dying(marks, max_retries=0),
                       progress=False)  # fmt: skip
    assert (marks / "died").exists()  # the worker of video 1 died after writing frames
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marks"]  # no root, no scratch
    # The same conversion again (a re-run by hand, or Ray's retry of the task) writes the root.
    convert_videos(clips, tmp_path / "root", executor=RayExecutor(), progress=False)
    convert_videos(clips, tmp_path / "local", workers=0, progress=False)
    _same_root(tmp_path / "root", tmp_path / "local")


def test_public_names_do_not_import_ray():
    import subprocess
    import sys

    code = "import sys, hf_lvf; hf_lvf.ray.read_windows; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert set(hf_lvf.ray.__all__) == {"RayExecutor", "frame_table", "read_windows"}


def test_every_camera_is_a_tensor_column_of_the_blocks(ray_cluster, tmp_path):
    """A root with image streams (cameras): each is a column of Ray's batches, ``(n, T, H,
    W, 3)`` uint8, with the core view's pixels; ``streams=`` picks them as in the core."""
    from hf_lvf.write import write_frames

    wrist = "observation.images.wrist"
    videos = []
    for v, n in enumerate((7, 5)):
        top, side = make_frames(n, 8, 12, seed=v), make_frames(n, 6, 10, seed=10 + v)
        videos.append(
            (f"v{v}", [{"top": a, wrist: b} for a, b in zip(top, side, strict=True)], None)
        )
    root = write_frames(tmp_path / "cams", videos, codec="png", video_column="top")
    want = {s["sample_idx"]: s for s in VideoWindows(root, window_length=3)}
    batches = list(read_windows(root, window_length=3).iter_batches(batch_size=4))
    got = {
        int(i): (v, w)
        for b in batches
        for i, v, w in zip(b["sample_idx"], b["video"], b[wrist], strict=True)
    }
    assert got.keys() == want.keys()
    for i, (video, camera) in got.items():
        assert camera.dtype == np.uint8 and camera.shape == (3, 6, 10, 3)
        np.testing.assert_array_equal(video, want[i]["video"])
        np.testing.assert_array_equal(camera, want[i][wrist])
    (first,) = read_windows(root, window_length=3, streams=[]).take(1)
    assert wrist not in first and "video" in first
