"""What a new user trips on first (issue 38's smaller things), each with its test: CLI
messages in flags, files with the umask's mode, the card's preview written where it is
linked, ``frame_indices`` (an int32 array) collated to ``(B, window_length)`` by any
DataLoader, a warning for dropped videos,
``info``'s plurals and ranges."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hf_lvf
from hf_lvf.card.describe import format_description
from hf_lvf.cli.commands import in_flags
from hf_lvf.write.synthetic import write_synthetic_root


@pytest.fixture
def root(tmp_path):
    return write_synthetic_root(
        tmp_path / "clips", num_videos=3, num_frames=[6, 3, 8], frame_size=(8, 8)
    )


def test_cli_messages_name_flags(root, tmp_path):
    assert (
        in_flags(
            "'x' already exists; pass overwrite=True (mode='overwrite') to replace it, or "
            "mode='append' to add videos to it"
        )
        == "'x' already exists; pass --overwrite to replace it, or --append to add videos to it"
    )
    assert (
        in_flags(
            "crop='center' needs frame_size=(H, W), the size to crop to; e.g. "
            "frame_size=(224, 224), crop='center'"
        )
        == "--crop center needs --frame-size HxW, the size to crop to; e.g. "
        "--frame-size 224x224 --crop center"
    )
    pytest.importorskip("av")
    from _videos import write_video

    video = write_video(tmp_path / "v.mp4", 4, (16, 16))
    done = subprocess.run(
        [sys.executable, "-m", "hf_lvf.cli", "convert", str(video), str(root), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "pass --overwrite to replace it, or --append" in done.stderr, done.stderr
    assert "overwrite=True" not in done.stderr and "mode=" not in done.stderr


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_save_window_writes_with_the_umasks_mode(root, tmp_path, umask):
    old = os.umask(umask)
    try:
        hf_lvf.save_window(hf_lvf.VideoWindows(root, window_length=2), 0, tmp_path / "w.webp")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "w.webp").stat().st_mode) == 0o666 & ~umask


def test_a_saved_card_has_the_preview_it_links(root, tmp_path):
    card = hf_lvf.build_card(root, window_length=2)
    linked = str(card).split("![")[1].split("](")[1].split(")")[0]
    card.save(tmp_path / "card" / "README.md")
    assert (tmp_path / "card" / linked).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plain = hf_lvf.build_card(root, window_length=2, preview=False)
    assert "![" not in str(plain)


def test_frame_indices_collate_to_batch_by_window_length(root):
    torch = pytest.importorskip("torch")
    loader = hf_lvf.safe_dataloader(
        hf_lvf.VideoWindows(root, window_length=3, hop_size=2), batch_size=2, num_workers=0
    )
    batch = next(iter(loader))
    assert isinstance(batch["frame_indices"], torch.Tensor)
    assert batch["frame_indices"].tolist() == [[0, 1, 2], [2, 3, 4]]


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # a pass's views
def test_a_plain_dataloader_batches_frame_indices_by_window_length(root):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    with pytest.warns(hf_lvf.errors.DroppedVideosWarning):  # video 1 has 3 frames
        windows = hf_lvf.VideoWindows(root, window_length=4)
    sample = windows[0]["frame_indices"]
    assert isinstance(sample, np.ndarray) and sample.dtype == np.int32 and sample.shape == (4,)
    # Video 0 (6 frames): starts 0, 1, 2; video 2 (8 frames): starts 0 to 4.
    want = [[s + j for j in range(4)] for s in [0, 1, 2, 0, 1, 2, 3, 4]]
    for dataset in (windows, windows.to_iterable_dataset()):
        batches = list(DataLoader(dataset, batch_size=3))
        first = batches[0]["frame_indices"]
        assert isinstance(first, torch.Tensor), type(dataset)
        assert first.dtype == torch.int32 and tuple(first.shape) == (3, 4), type(dataset)
        assert [tuple(b["frame_indices"].shape) for b in batches] == [(3, 4), (3, 4), (2, 4)]
        assert torch.cat([b["frame_indices"] for b in batches]).tolist() == want


def test_a_plain_dataloader_batches_frame_is_pad_and_timestamps(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    # Read at 10 fps: video 0 (20 fps, 6 frames) is 3 virtual frames, stored frames 0, 2, 4,
    # padded to 4 with its last; video 1 (10 fps, 5 frames) gives two windows.
    videos = [
        ("fast", iter(np.zeros((6, 8, 8, 3), np.uint8)), {"fps": 20}),
        ("slow", iter(np.zeros((5, 8, 8, 3), np.uint8)), {"fps": 10}),
    ]
    root = hf_lvf.write.write_frames(tmp_path / "rates", videos)
    windows = hf_lvf.VideoWindows(root, window_length=4, short_videos="pad", fps=10)
    sample = windows[0]
    assert sample["frame_is_pad"].dtype == np.bool_ and sample["frame_is_pad"].shape == (4,)
    assert sample["timestamps"].dtype == np.float64 and sample["timestamps"].shape == (4,)
    batch = next(iter(DataLoader(windows, batch_size=3)))
    assert batch["frame_indices"].dtype == torch.int32
    assert batch["frame_indices"].tolist() == [[0, 2, 4, 4], [0, 1, 2, 3], [1, 2, 3, 4]]
    assert batch["frame_is_pad"].dtype == torch.bool
    assert batch["frame_is_pad"].tolist() == [[False] * 3 + [True]] + [[False] * 4] * 2
    assert batch["timestamps"].dtype == torch.float64
    assert batch["timestamps"].tolist() == [
        [0.0, 0.1, 0.2, 0.2],
        [0.0, 0.1, 0.2, 0.3],
        [0.1, 0.2, 0.3, 0.4],
    ]


def test_safe_dataloader_batches_frame_indices_of_map_style_rows(root):
    # datasets decodes the List feature of a map-style row as a list; default_collate
    # would make it window_length tensors of shape (B,).
    torch = pytest.importorskip("torch")
    import datasets

    ds = datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", window_length=3, hop_size=2
    )
    assert type(ds[0]["frame_indices"]) is list
    batch = next(iter(hf_lvf.safe_dataloader(ds, batch_size=2, num_workers=0)))
    assert batch["frame_indices"].dtype == torch.int32
    assert batch["frame_indices"].tolist() == [[0, 1, 2], [2, 3, 4]]


def test_a_warning_says_how_many_videos_are_dropped_and_why(root):
    with pytest.warns(
        hf_lvf.errors.DroppedVideosWarning,
        match=r"1 of 3 videos has fewer than 4 "
        r"frames \(one window of window_length=4, frame_skip=0\)",
    ):
        windows = hf_lvf.VideoWindows(root, window_length=4)
    assert len(windows) == 3 + 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hf_lvf.VideoWindows(root, window_length=3)  # every video gives a window: no warning


def test_info_says_one_video_and_one_length(tmp_path):
    one = write_synthetic_root(tmp_path / "one", num_videos=1, num_frames=132, frame_size=(8, 8))
    text = format_description(hf_lvf.describe(one))
    rows = dict(
        line.split(None, 1)
        if not line.startswith("frame sizes")
        else ("frame sizes", line.split("  ")[-1].strip())
        for line in text.splitlines()
    )
    assert rows["videos"] == "1"
    assert rows["frames"] == "132 (132 frames a video)"
    assert rows["frame sizes"] == "8x8: 1 video"
    assert rows["windows"].endswith("; from 1 video)")


def test_windows_are_read_only_arrays_of_their_indices(root):
    sample = hf_lvf.VideoWindows(root, window_length=2)[0]
    assert np.asarray(sample["frame_indices"]).tolist() == [0, 1]
