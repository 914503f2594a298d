"""LeRobotWindows: a converted LeRobot root read in LeRobot's conventions. What
``LeRobotDataset(root, delta_timestamps=...)[index]`` gives is written here from its rules
(lerobot/datasets/lerobot_dataset.py: ``__getitem__``, ``_get_query_indices``,
``_query_videos``; LeRobot needs Python 3.12 and does not install here): per key of
``delta_timestamps`` the frames ``index + round(delta * fps)`` clamped to the episode, with
``<key>_is_pad``; cameras float32 ``(C, H, W)`` or ``(K, C, H, W)`` in [0, 1]; fields as
tensors of the frame; ``task`` the task string."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from _lerobot import FPS, TASKS, write_lerobot
from _videos import decode_rgb

from hf_lvf.convert import convert_videos
from hf_lvf.errors import LayoutError

torch = pytest.importorskip("torch")

TOP, WRIST = "observation.images.top", "observation.images.wrist"
LENGTHS = (5, 7, 4)
DELTAS = {TOP: [-0.1, 0.0], "observation.state": [-0.1, 0.0], "action": [0.0, 0.1, 0.2]}
FIELDS = ("observation.state", "action", "timestamp", "frame_index", "episode_index", "index")


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, dict, dict]:
    """A 2-camera dataset converted losslessly (PNG): the root, the dataset's per-frame
    columns, and each camera's frames as decoded from its MP4 (dataset index order)."""
    tmp = tmp_path_factory.mktemp("lerobot")
    columns = write_lerobot(tmp / "ds", lengths=LENGTHS, cameras=(TOP, WRIST))
    convert_videos(tmp / "ds", tmp / "root", workers=0, codec="png")
    frames = {c: decode_rgb(tmp / f"ds/videos/{c}/chunk-000/file-000.mp4") for c in (TOP, WRIST)}
    return tmp / "root", columns, frames


def _lerobot_item(index: int, columns: dict, frames: dict, deltas: dict) -> dict:
    """LeRobotDataset's ``[index]``, by its rules."""
    starts = np.cumsum([0, *LENGTHS])
    episode = int(np.searchsorted(starts, index, side="right") - 1)
    first, end = int(starts[episode]), int(starts[episode + 1])
    item = {}
    for key in (TOP, WRIST, *FIELDS, "task_index"):
        reached = [index + round(d * FPS) for d in deltas.get(key, [0.0])]
        rows = [min(max(r, first), end - 1) for r in reached]
        if key in (TOP, WRIST):
            images = np.stack([frames[key][r] for r in rows]).transpose(0, 3, 1, 2)
            value = torch.from_numpy(images.astype(np.float32)) / 255
        else:
            value = torch.from_numpy(np.asarray(columns[key][rows]))
        item[key] = value if key in deltas else value[0]
        if key in deltas:
            item[key + "_is_pad"] = torch.tensor([not first <= r < end for r in reached])
    item["task"] = TASKS[int(columns["task_index"][index])]
    return item


def _assert_same(got: dict, want: dict, where: str) -> None:
    assert set(got) == set(want), where
    for key, value in want.items():
        if isinstance(value, str):
            assert got[key] == value, (where, key)
            continue
        assert got[key].dtype == value.dtype and got[key].shape == value.shape, (where, key)
        torch.testing.assert_close(got[key], value, rtol=0, atol=0, msg=f"{where} {key}")


def test_every_index_is_lerobots_sample(converted) -> None:
    """Every index, both cameras (TOP, the camera of ``bytes``, at offsets; WRIST at the
    frame), fields at offsets and at the frame: LeRobotDataset's keys, dtypes, shapes and
    values, exactly (PNG is lossless), through take, iter_samples and a pickled copy."""
    from hf_lvf import LeRobotWindows

    root, columns, frames = converted
    ds = LeRobotWindows(root, delta_timestamps=DELTAS)
    assert len(ds) == ds.num_frames == sum(LENGTHS) and ds.num_episodes == 3
    for index, sample in enumerate(ds.iter_samples()):
        _assert_same(sample, _lerobot_item(index, columns, frames, DELTAS), f"index {index}")
    copy = pickle.loads(pickle.dumps(ds))  # as DataLoader workers get it
    for got, index in zip(copy.take([9, 0, 15]), [9, 0, 15], strict=True):
        _assert_same(got, _lerobot_item(index, columns, frames, DELTAS), f"take {index}")
    plain = LeRobotWindows(root)  # no delta_timestamps: every key the frame's alone
    _assert_same(plain[6], _lerobot_item(6, columns, frames, {}), "no deltas")


def test_meta_is_what_a_policy_reads(converted) -> None:
    """``meta``: fps, the features the root holds, stats as numpy arrays per element."""
    from hf_lvf import LeRobotWindows

    root, columns, _ = converted
    ds = LeRobotWindows(root, streams=[])  # WRIST not read: not a feature of this view
    assert ds.fps == FPS and ds.meta.camera_keys == [TOP] == ds.meta.video_keys
    assert WRIST not in ds.meta.features and ds.meta.shapes["action"] == (6,)
    assert WRIST not in ds[0]
    for name in ("observation.state", "action"):
        stats = ds.meta.stats[name]
        np.testing.assert_allclose(stats["mean"], columns[name].astype(np.float64).mean(0))
        np.testing.assert_array_equal(stats["max"], columns[name].max(0))
    both = LeRobotWindows(root)
    assert both.meta.camera_keys == [TOP, WRIST]
    # The cameras' statistics are LeRobot's own (meta/stats.json), per channel, (3, 1, 1):
    # what a policy normalises images with, and broadcast over a (C, H, W) camera.
    kept = json.loads((Path(root).parent / "ds/meta/stats.json").read_text())
    for camera in (TOP, WRIST):
        assert set(both.meta.stats[camera]) == {"mean", "std", "min", "max", "count"}
        for stat in ("mean", "std", "min", "max"):
            value = both.meta.stats[camera][stat]
            assert value.shape == (3, 1, 1)
            np.testing.assert_array_equal(value, np.asarray(kept[camera][stat]))
        mean, std = (torch.as_tensor(both.meta.stats[camera][k]) for k in ("mean", "std"))
        image = both[0][camera]  # (C, H, W) in [0, 1]
        assert ((image - mean) / std).shape == image.shape
    assert TOP in ds.meta.stats and WRIST not in ds.meta.stats  # a camera not read: none
    # meta.tasks: LeRobot's table, the task strings as its index, each its task_index.
    assert ds.meta.total_tasks == len(TASKS) and list(ds.meta.tasks.index) == list(TASKS)
    assert ds.meta.tasks["task_index"].tolist() == list(range(len(TASKS)))
    for i, task in enumerate(TASKS):
        assert ds.meta.get_task_index(task) == i
        frame = next(k for k in range(len(ds)) if int(columns["task_index"][k]) == i)
        assert ds[frame]["task"] == task and int(ds[frame]["task_index"]) == i
    assert ds.meta.get_task_index("no such task") is None


def test_a_lerobot_training_loop_runs_unchanged(converted) -> None:
    """A loop written for LeRobotDataset (normalise with meta.stats, batches from a
    shuffled DataLoader) through safe_dataloader: LeRobot's batch keys and shapes, each
    index once per epoch."""
    from hf_lvf import LeRobotWindows, safe_dataloader

    root, _, _ = converted
    ds = LeRobotWindows(root, delta_timestamps=DELTAS)
    loader = safe_dataloader(ds, batch_size=4, shuffle=True, num_workers=0, seed=3)
    mean = torch.as_tensor(ds.meta.stats["action"]["mean"], dtype=torch.float32)
    std = torch.as_tensor(ds.meta.stats["action"]["std"], dtype=torch.float32)
    seen = []
    for batch in loader:
        n = len(batch["task"])
        assert batch[TOP].shape == (n, 2, 3, 64, 64) and batch[WRIST].shape == (n, 3, 64, 64)
        assert batch["action"].shape == (n, 3, 6) and batch["action_is_pad"].shape == (n, 3)
        assert batch["index"].shape == (n,) and all(t in TASKS for t in batch["task"])
        assert torch.isfinite((batch["action"] - mean) / std).all()
        seen += batch["index"].tolist()
    assert sorted(seen) == list(range(sum(LENGTHS))) and seen != sorted(seen)


def test_options_that_make_windows_and_other_roots_are_refused(converted, tmp_path) -> None:
    from hf_lvf import LeRobotWindows
    from hf_lvf.write import write_frames

    root, _, _ = converted
    with pytest.raises(ValueError, match="window_length= is not one of its options"):
        LeRobotWindows(root, window_length=4)
    plain = write_frames(tmp_path / "plain", [("a", np.zeros((3, 8, 8, 3), np.uint8), None)])
    with pytest.raises(LayoutError, match="not a root converted from a LeRobot dataset"):
        LeRobotWindows(plain)
