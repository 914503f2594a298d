"""examples/: each script trains for a few steps on a synthetic root, as a user runs it.

The scripts run in subprocesses (``python examples/...``, ``python -m torch.distributed.run``),
so what is tested is the file a user copies, with its own argument parsing and guards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import free_port

import hf_lvf
from hf_lvf.write.synthetic import synthetic_frames

pytest.importorskip("torch", reason="the examples train with torch (the torch extra)")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LENGTHS = (24, 20, 30, 16, 24, 18)  # frames per video of the train root; labels are i % 3


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("examples-data")
    videos = (
        (f"clip_{i:02d}", synthetic_frames(n, 32, 32, seed=i), {"label": i % 3})
        for i, n in enumerate(LENGTHS)
    )
    hf_lvf.write.write_frames(folder / "train", videos)
    return folder


def _run(args: list[str], cwd: Path, timeout: float = 180) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_DATASETS_CACHE": str(cwd / "hf-cache")}
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _classifier(data_dir: Path, *extra: str) -> list[str]:
    return [
        str(EXAMPLES / "train_classifier.py"),
        "--data-dir",
        str(data_dir),
        "--window-length",
        "4",
        "--frame-size",
        "16",
        "--batch-size",
        "3",
        "--num-workers",
        "1",
        "--log-every",
        "2",
        *extra,
    ]


def _records(path: Path) -> list[tuple[int, int, int, int]]:
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]


def _weights(path: Path) -> dict:
    import torch

    return torch.load(path, weights_only=True)["model"]


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory, data_dir) -> tuple[Path, str]:
    """One uninterrupted run of 2 epochs (a DataLoader worker): the folder of its record and
    checkpoint, and what it printed. Both tests below compare with it, so it runs once."""
    folder = tmp_path_factory.mktemp("whole-run")
    args = _classifier(data_dir, "--epochs", "2", "--checkpoint", "whole.pt", "--record", "whole")
    return folder, _run([sys.executable, *args], folder)


def test_train_classifier_resume_continues_the_same_run(tmp_path, data_dir, whole_run):
    """Stopping after 3 steps and resuming reads the windows and reaches the weights of
    one uninterrupted run (each with one DataLoader worker: the shuffled stream's order, as
    `datasets` deals shards and shuffle buffers to workers, depends on their number)."""
    import torch

    folder, whole = whole_run
    assert re.search(r"epoch 0 done: \d+ steps, [0-9.]+ windows/s", whole), whole
    stopped = _run(
        [sys.executable, *_classifier(data_dir, "--epochs", "2", "--checkpoint", "part.pt")]
        + ["--record", "part", "--max-steps", "3"],
        tmp_path,
    )
    assert "stopped after 3 steps" in stopped
    resumed = _run(
        [sys.executable, *_classifier(data_dir, "--epochs", "2", "--checkpoint", "part.pt")]
        + ["--record", "part", "--resume"],
        tmp_path,
    )
    assert "resumed at epoch 0, step 3" in resumed

    whole_rows = _records(folder / "whole.rank0")
    # every window of the root, clips_per_video=2 per video, in each of the 2 epochs
    assert len(whole_rows) == 2 * 2 * len(LENGTHS)
    assert {epoch for _, epoch, _, _ in whole_rows} == {0, 1}
    assert _records(tmp_path / "part.rank0") == whole_rows
    # the orders of the two epochs differ (a new draw and shuffle every epoch)
    assert [r[3] for r in whole_rows if r[1] == 0] != [r[3] for r in whole_rows if r[1] == 1]
    final, resumed_final = _weights(folder / "whole.pt"), _weights(tmp_path / "part.pt")
    assert final.keys() == resumed_final.keys()
    for name in final:
        torch.testing.assert_close(resumed_final[name], final[name], rtol=0, atol=0)


def test_train_classifier_torchrun_two_ranks_read_disjoint_windows(tmp_path, data_dir, whole_run):
    """Under torchrun, 2 ranks (no DataLoader workers: tests/test_cluster.py runs ranks with
    workers) read disjoint windows, together those one process reads in epoch 0."""
    out = _run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
        + ["--master-port", str(free_port())]
        + _classifier(data_dir, "--epochs", "1", "--record", "ddp", "--num-workers", "0"),
        tmp_path,
    )
    assert "rank 0 epoch 0 done" in out and "rank 1 epoch 0 done" in out, out
    ranks = [[r[3] for r in _records(tmp_path / f"ddp.rank{rank}")] for rank in (0, 1)]
    assert all(ranks), ranks
    assert not set(ranks[0]) & set(ranks[1])
    assert len(ranks[0]) + len(ranks[1]) == len(set(ranks[0]) | set(ranks[1]))
    # together the ranks read what one process reads in that epoch, each window once
    folder, _ = whole_run
    alone = [r[3] for r in _records(folder / "whole.rank0") if r[1] == 0]
    assert sorted(ranks[0] + ranks[1]) == sorted(alone)


def test_finetune_videomae_trains_through_trainer(tmp_path, data_dir):
    pytest.importorskip("transformers", reason="the example fine-tunes a transformers model")
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate")
    out = _run(
        [sys.executable, str(EXAMPLES / "finetune_videomae.py"), "--data-dir", str(data_dir)]
        + ["--max-steps", "4", "--log-every", "2", "--output-dir", str(tmp_path / "out")],
        tmp_path,
    )
    assert re.search(r"step 4: [0-9.]+ windows/s", out), out
    assert re.search(r"trained 4 steps, final loss [0-9.]+", out), out


def test_finetune_videomae_transform_normalizes_as_the_processor_says(data_dir):
    """The transform's pixel_values are the window's pixels, channels first, scaled by the
    processor's own mean and std (0.5 for VideoMAE), and labels the root's."""
    import importlib.util

    import numpy as np

    pytest.importorskip("transformers", reason="the example fine-tunes a transformers model")
    from transformers import VideoMAEImageProcessor

    spec = importlib.util.spec_from_file_location("finetune", EXAMPLES / "finetune_videomae.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    windows = hf_lvf.VideoWindows(data_dir / "train", window_length=4)
    videos = [windows[0]["video"], windows[7]["video"]]
    processor = VideoMAEImageProcessor(size={"height": 32, "width": 32})
    out = module.make_transform(processor, "label")({"video": videos, "label": [2, 1]})
    assert [int(v) for v in out["labels"]] == [2, 1]
    for video, pixels in zip(videos, out["pixel_values"], strict=True):
        expected = (video.transpose(0, 3, 1, 2).astype(np.float32) / 255 - 0.5) / 0.5
        assert tuple(pixels.shape) == (4, 3, 32, 32)
        np.testing.assert_allclose(pixels.numpy(), expected, atol=1e-6)
