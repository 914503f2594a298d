"""Per-frame fields on the read side: gathered at frame_indices, at offsets (action chunks),
and LeRobot's every-frame sampling, against arrays written with pyarrow + lance directly."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from _field_roots import LENGTHS, add_columns, write_field_root

import hf_lvf
from hf_lvf.errors import LayoutError

FIELDS = ("observation.state", "action", "timestamp", "done", "note")
STARTS = np.concatenate([[0], np.cumsum(LENGTHS)[:-1]])


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("fields") / "root"
    return path, write_field_root(path)


def _expect(values, rows):
    return {
        name: (values[name][rows].tolist() if name == "note" else values[name][rows])
        for name in FIELDS
    }


def _check(sample, values, skip=()):
    rows = STARTS[sample["video_idx"]] + np.asarray(sample["frame_indices"])
    for name, want in _expect(values, rows).items():
        if name in skip:
            continue
        got = sample[name]
        if name == "note":
            assert got == want
        else:
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want)


def test_take_and_iteration_gather_every_field_at_frame_indices(root):
    path, values = root
    w = hf_lvf.VideoWindows(path, window_length=2, frame_skip=1)
    taken = w.take(range(len(w)))
    assert [k for k in taken[0] if k in FIELDS] == list(FIELDS)
    assert taken[0]["observation.state"].dtype == np.float32
    assert taken[0]["observation.state"].shape == (2, 6)
    for sample in taken:
        _check(sample, values)
    for sample in w:
        _check(sample, values)
    _check(w[-1], values)


def test_padded_frames_take_the_clamped_frames_values(root):
    path, values = root
    w = hf_lvf.VideoWindows(path, window_length=4, short_videos="pad")
    short = [s for s in w if s["video_idx"] == 1][0]
    assert short["frame_indices"].tolist() == [0, 1, 2, 2]
    assert short["frame_is_pad"].tolist() == [False, False, False, True]
    np.testing.assert_array_equal(short["action"], values["action"][[5, 6, 7, 7]])
    _check(short, values)


def test_selection_empty_and_unknown(root):
    path, _ = root
    sample = hf_lvf.VideoWindows(path, frame_fields=["action"])[0]
    assert "action" in sample and not set(FIELDS[2:]) & set(sample)
    assert not set(FIELDS) & set(hf_lvf.VideoWindows(path, frame_fields=[])[0])
    with pytest.raises(ValueError, match=r"'actions'.*its fields: 'observation.state', 'action'"):
        hf_lvf.VideoWindows(path, frame_fields=["actions"])[0]
    with pytest.raises(ValueError, match="frame_fields must be a list"):
        hf_lvf.VideoWindows(path, frame_fields="action")


def test_every_frame_sampling_with_action_chunks_and_masks(root):
    path, values = root
    w = hf_lvf.VideoWindows(
        path,
        window_length=2,
        sampling="every_frame",
        frame_offsets={"action": range(3)},
        delta_timestamps={"observation.state": [-0.1, 0.0]},
    )
    assert len(w) == sum(LENGTHS)  # one sample per frame, in frame order
    samples = list(w)
    assert [(s["video_idx"], s["frame_indices"][-1]) for s in samples] == [
        (v, f) for v, t in enumerate(LENGTHS) for f in range(t)
    ]
    first, last = samples[0], samples[4]  # episode 0: its first and last frame
    assert first["frame_indices"].tolist() == [0, 0]
    assert first["frame_is_pad"].tolist() == [True, False]
    assert first["observation.state_is_pad"].tolist() == [True, False]
    np.testing.assert_array_equal(first["observation.state"], values["observation.state"][[0, 0]])
    assert last["action_is_pad"].tolist() == [False, True, True]
    np.testing.assert_array_equal(last["action"], values["action"][[4, 4, 4]])
    assert last["action"].dtype == np.float32 and last["action"].shape == (3, 6)
    ep1 = samples[6]  # episode 1, frame 1 of 3
    assert ep1["action_is_pad"].tolist() == [False, False, True]
    np.testing.assert_array_equal(ep1["action"][:, 0], values["action"][[6, 7, 7], 0])
    np.testing.assert_array_equal(ep1["video"], w.take([6])[0]["video"])
    _check(
        samples[2], values, skip=("action", "observation.state")
    )  # other fields: at frame_indices, as ever


def test_offsets_in_seconds_off_the_grid(root):
    path, _ = root
    with pytest.raises(ValueError, match=r"delta_timestamps\['action'\] holds 0.05 s"):
        hf_lvf.VideoWindows(path, delta_timestamps={"action": [0, 0.05]})
    with pytest.raises(ValueError, match="'spam' is in both"):
        hf_lvf.VideoWindows(path, frame_offsets={"spam": [0]}, delta_timestamps={"spam": [0]})
    with pytest.raises(ValueError, match=r"'nope'.*its fields"):
        hf_lvf.VideoWindows(path, frame_offsets={"nope": [0]})[0]


def test_unsupported_column_type_is_refused_at_open(tmp_path):
    path = tmp_path / "root"
    write_field_root(path)
    ragged = pa.array([[1] * (r % 3) for r in range(sum(LENGTHS))], pa.list_(pa.int64()))
    add_columns(path, {"ragged": ragged})
    w = hf_lvf.VideoWindows(path)
    with pytest.raises(LayoutError, match=r"column 'ragged' .* has type list<item: int64>"):
        w[0]


def test_features_and_iterable_dataset_keep_dtypes(root):
    import datasets

    path, values = root
    w = hf_lvf.VideoWindows(path, window_length=2, frame_offsets={"action": [0, 1]})
    features = w.features
    assert features["observation.state"] == datasets.Array2D((2, 6), "float32")
    assert features["action"] == datasets.Array2D((2, 6), "float32")
    assert features["action_is_pad"] == datasets.List(datasets.Value("bool"), length=2)
    assert features["note"] == datasets.List(datasets.Value("string"), length=2)
    assert features["done"] == datasets.List(datasets.Value("bool"), length=2)
    ds = w.to_iterable_dataset().with_format("numpy")
    sample = next(iter(ds))
    assert sample["observation.state"].dtype == np.float32
    np.testing.assert_array_equal(sample["observation.state"], values["observation.state"][[0, 1]])
    np.testing.assert_array_equal(sample["action"], values["action"][[1, 2]])


def test_load_dataset_streaming_and_map_style_carry_fields(root):
    import datasets

    path, values = root
    options = {"data_dir": str(path), "window_length": 2, "split": "train"}
    ds = datasets.load_dataset(
        "hf_lvf", streaming=True, frame_offsets={"action": [0, 1]}, **options
    )
    assert ds.features["action"] == datasets.Array2D((2, 6), "float32")
    for fmt in ("numpy", "torch"):
        sample = next(iter(ds.with_format(fmt)))
        state = np.asarray(sample["observation.state"])
        assert state.dtype == np.float32 and state.shape == (2, 6)
        np.testing.assert_array_equal(state, values["observation.state"][[0, 1]])
        np.testing.assert_array_equal(np.asarray(sample["action"]), values["action"][[1, 2]])
        assert np.asarray(sample["action_is_pad"]).tolist() == [False, False]
    plain = next(iter(ds))
    assert plain["note"] == ["row 0", "row 1"]
    mapped = datasets.load_dataset("hf_lvf", frame_offsets={"action": [0, 1]}, **options)
    assert mapped.features == ds.features | {"video": mapped.features["video"]}
    assert len(mapped) == 12
    windows = hf_lvf.VideoWindows(path, window_length=2, frame_offsets={"action": [0, 1]})
    for fmt in ("numpy", "torch", "pandas", "arrow"):
        rows = mapped.with_format(fmt)[4:7]
        state = np.asarray(np.stack(rows["observation.state"]) if fmt == "pandas" else None)
        if fmt == "arrow":
            state = np.array(rows.column("observation.state").to_pylist(), np.float32)
        elif fmt != "pandas":
            state = np.asarray(rows["observation.state"])
        assert state.dtype == np.float32 and state.shape == (3, 2, 6), fmt
        want = [w["observation.state"] for w in windows.take([4, 5, 6])]
        np.testing.assert_array_equal(state, np.stack(want))
    row = mapped.with_format("numpy")[6]
    want = windows[6]
    for name in (*FIELDS, "action_is_pad"):
        got = row[name].tolist() if name == "note" else row[name]
        np.testing.assert_array_equal(got, want[name])
    with pytest.raises(ValueError, match="sampling='every_frame' is read with streaming=True"):
        datasets.load_dataset("hf_lvf", sampling="every_frame", **options)


def test_table_formats_combining_and_the_dataloader_keep_fields(root):
    import datasets
    from datasets.distributed import split_dataset_by_node

    path, values = root
    w = hf_lvf.VideoWindows(path, window_length=2, frame_offsets={"action": [0, 1]})
    it = w.to_iterable_dataset()
    table = next(iter(it.with_format("arrow").iter(batch_size=3)))
    assert table.schema.field("action").type.value_type == "float32"  # an Array2D column
    assert table.column("action").to_pylist()[0] == values["action"][[1, 2]].tolist()
    assert table.column("note").to_pylist()[0] == ["row 0", "row 1"]
    frame = next(iter(it.with_format("pandas").iter(batch_size=2)))
    assert frame["observation.state"][1].dtype == np.float32
    np.testing.assert_array_equal(
        np.stack(frame["observation.state"][1]), values["observation.state"][[1, 2]]
    )
    for combined in (
        datasets.concatenate_datasets([it, it]),
        datasets.interleave_datasets([it, it]),
    ):
        sample = next(iter(combined.with_format("numpy")))
        assert sample["action"].dtype == np.float32
        np.testing.assert_array_equal(sample["action"], values["action"][[1, 2]])
    second = next(iter(split_dataset_by_node(it, rank=1, world_size=2)))
    _check(second, values, skip=("action",))
    batch = next(iter(hf_lvf.safe_dataloader(w, batch_size=4, num_workers=1)))
    assert batch["observation.state"].dtype == __import__("torch").float32
    assert tuple(batch["observation.state"].shape) == (4, 2, 6)
    np.testing.assert_array_equal(
        batch["action"].numpy(), values["action"][[[1, 2], [2, 3], [3, 4], [4, 4]]]
    )
    assert batch["action_is_pad"].numpy().tolist()[3] == [False, True]
    assert list(w[0])[-6:] == [
        "observation.state",
        "action",
        "action_is_pad",
        "timestamp",
        "done",
        "note",
    ]


def test_cli_show_reads_fields_and_offsets(root, tmp_path, capsys):
    from hf_lvf.cli import main

    path, _ = root
    argv = ["show", str(path), "4", "-o", str(tmp_path / "w.png"), "--window-length", "2"]
    argv += ["--sampling", "every_frame", "--frame-offsets", "action=0,1,2", "--frame-fields"]
    assert main([*argv, "note"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^action\s+float32 array \(3, 6\)$", out, re.M)
    assert re.search(r"^action_is_pad\s+bool array \(3,\)$", out, re.M)
    assert re.search(r"^note\s+\['row 3', 'row 4'\]$", out, re.M)
    assert "timestamp" not in out


def _lerobot_query(idx, ep_start, ep_end, delta_idx):
    """LeRobot's ``_get_query_indices`` for one key, as its source writes it (the oracle)."""
    query = [max(ep_start, min(ep_end - 1, idx + delta)) for delta in delta_idx]
    padding = [(idx + delta < ep_start) | (idx + delta >= ep_end) for delta in delta_idx]
    return query, padding


@pytest.mark.parametrize(
    "deltas",
    [
        {"action": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]},
        {"observation.state": [-0.3, -0.1, 0.0], "action": [-0.1, 0.0, 0.8]},
    ],
)
def test_every_frame_samples_equal_lerobots_query_indices(root, deltas):
    path, values = root
    w = hf_lvf.VideoWindows(path, sampling="every_frame", delta_timestamps=deltas)
    samples = list(w)
    ends = np.cumsum(LENGTHS)
    assert len(samples) == ends[-1]
    for idx, sample in enumerate(samples):  # idx: LeRobot's global frame index
        ep = int(np.searchsorted(ends, idx, side="right"))
        assert sample["video_idx"] == ep and sample["frame_indices"] == [idx - STARTS[ep]]
        for key, seconds in deltas.items():
            delta_idx = [round(d * 10.0) for d in seconds]
            query, padding = _lerobot_query(idx, int(STARTS[ep]), int(ends[ep]), delta_idx)
            np.testing.assert_array_equal(sample[key], values[key][query])
            assert sample[f"{key}_is_pad"].tolist() == padding


def test_fields_and_offsets_cost_no_extra_take(root):
    path, _ = root
    takes = {}
    for name, options in {
        "pixels": {"frame_fields": []},
        "fields": {"frame_offsets": {"action": range(16)}},
    }.items():
        w = hf_lvf.VideoWindows(path, window_length=2, sampling="every_frame", **options)
        reader = w._frames.reader
        read_now, calls = reader._read_now, []
        reader._read_now = lambda rows, read_now=read_now, calls=calls: (
            calls.append(len(rows)) or read_now(rows)
        )
        assert len(list(w)) == sum(LENGTHS)
        w.take([3, 9, 1])
        takes[name] = len(calls)
    assert takes["pixels"] == takes["fields"]


def test_a_field_named_as_a_sample_key_is_refused(tmp_path):
    path = tmp_path / "root"
    write_field_root(path)
    add_columns(path, {"frame_is_pad": pa.array(np.zeros(sum(LENGTHS), bool))})
    with pytest.raises(LayoutError, match="per-frame field 'frame_is_pad'"):
        hf_lvf.VideoWindows(path)[0]
    assert "frame_is_pad" not in hf_lvf.VideoWindows(path, frame_fields=["action"])[0]


def test_features_leave_the_process_free_of_lance(root, tmp_path):
    """The fields' features come from a child process: forked workers may still read."""
    import subprocess
    import sys
    from pathlib import Path

    path, _ = root
    code = (
        "import hf_lvf, sys\n"
        "from hf_lvf.processes import fork_is_unsafe\n"
        f"w = hf_lvf.VideoWindows({str(path)!r}, window_length=2)\n"
        "assert str(w.features['action']).startswith('Array2D'), w.features\n"
        "print(fork_is_unsafe(), 'lance' in sys.modules)\n"
    )
    env = {"PYTHONPATH": str(Path(hf_lvf.__file__).parents[1]), "HF_LVF_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_every_frame_sampling_refuses_what_it_cannot_plan():
    with pytest.raises(ValueError, match="hop_size must be 1, got 2"):
        hf_lvf.WindowParams(sampling="every_frame", hop_size=2)
    with pytest.raises(ValueError, match="windows_in='videos'"):
        hf_lvf.WindowParams(sampling="every_frame", windows_in="spans")
    with pytest.raises(ValueError, match="sampling must be 'windows' or 'every_frame', got 'each'"):
        hf_lvf.WindowParams(sampling="each")
