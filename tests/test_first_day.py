"""What a new user trips on first (issue 38's smaller things), each with its test: CLI
messages in flags, files with the umask's mode, the card's preview written where it is
linked, ``frame_indices`` collated to ``(B, window_length)``, a warning for dropped videos,
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
from hf_lvf.cli.commands import in_flags
from hf_lvf.read.describe import format_description
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


def test_a_warning_says_how_many_videos_are_dropped_and_why(root):
    with pytest.warns(
        hf_lvf.DroppedVideosWarning,
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
