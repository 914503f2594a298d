"""``hf_lvf.save_window``: a window as the model sees it, as an animation or a contact sheet."""

from __future__ import annotations

import io

import numpy as np
import pytest
from _roots import hf_root
from PIL import Image

import hf_lvf
from hf_lvf import VideoWindows, save_window
from hf_lvf.card.preview import (
    CAPTION_HEIGHT,
    DEFAULT_FRAME_MS,
    SHEET_COLUMNS,
    SHEET_GAP,
    describe_sample,
    tile_origin,
)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    # Every frame differs from the one before (encoders merge identical ones).
    return hf_root(tmp_path_factory.mktemp("show") / "root", lengths=(12, 30, 20))


@pytest.fixture(scope="module")
def root_with_fps(tmp_path_factory):
    return hf_root(
        tmp_path_factory.mktemp("show-fps") / "root",
        lengths=(12, 30),
        metadata=lambda i: {"fps": 8 if i == 0 else 25.0},
    )


def _frames(path) -> tuple[list[np.ndarray], list[int]]:
    picture = Image.open(path)
    frames, durations = [], []
    for k in range(picture.n_frames):
        picture.seek(k)
        frames.append(np.asarray(picture.convert("RGB")))
        durations.append(picture.info["duration"])
    return frames, durations


def test_a_lossless_webp_holds_the_window_exactly(root, tmp_path):
    w = VideoWindows(root, window_length=6, hop_size=3)
    sample = save_window(w, 3, tmp_path / "w.webp", lossless=True)
    want = w[3]
    assert sample.keys() == want.keys() and sample["sample_idx"] == 3
    np.testing.assert_array_equal(sample["video"], want["video"])
    frames, durations = _frames(tmp_path / "w.webp")
    assert len(frames) == 6
    np.testing.assert_array_equal(np.stack(frames), want["video"])
    assert durations == [DEFAULT_FRAME_MS] * 6  # no fps recorded


def test_a_webp_is_the_window_within_webp_loss(root, tmp_path):
    w = VideoWindows(root, window_length=5)
    save_window(w, -1, tmp_path / "last.webp")
    frames, _ = _frames(tmp_path / "last.webp")
    want = w[len(w) - 1]["video"].astype(np.int16)
    assert len(frames) == 5
    assert np.abs(np.stack(frames).astype(np.int16) - want).mean() < 3.0


def test_reading_options_are_what_is_shown(root, tmp_path):
    w = VideoWindows(root, window_length=4, frame_skip=2, frame_size=(24, 24), crop="center")
    save_window(w, 7, tmp_path / "cropped.webp", lossless=True)
    frames, _ = _frames(tmp_path / "cropped.webp")
    np.testing.assert_array_equal(np.stack(frames), w[7]["video"])
    assert frames[0].shape == (24, 24, 3)


def test_frames_last_as_long_as_at_the_videos_fps(root_with_fps, tmp_path):
    w = VideoWindows(root_with_fps, window_length=3)
    save_window(w, 0, tmp_path / "v0.webp")  # video 0: 8 fps
    assert _frames(tmp_path / "v0.webp")[1] == [125] * 3
    skip = VideoWindows(root_with_fps, window_length=3, frame_skip=1)
    save_window(skip, -1, tmp_path / "v1.webp")  # video 1: 25 fps, every other frame
    assert _frames(tmp_path / "v1.webp")[1] == [80] * 3
    save_window(w, 0, tmp_path / "given.webp", fps=4)
    assert _frames(tmp_path / "given.webp")[1] == [250] * 3
    save_window(w, 0, tmp_path / "w.gif")
    frames, durations = _frames(tmp_path / "w.gif")
    assert len(frames) == 3 and durations == [120] * 3  # GIF counts in hundredths


def test_a_png_is_a_contact_sheet_with_frame_numbers(root, tmp_path):
    w = VideoWindows(root, window_length=10, frame_skip=1, hop_size=2)
    sample = save_window(w, 5, tmp_path / "sheet.png")
    sheet = np.asarray(Image.open(tmp_path / "sheet.png").convert("RGB"))
    height, width = w.frame_size
    rows = -(-10 // SHEET_COLUMNS)
    assert sheet.shape == (
        rows * (height + CAPTION_HEIGHT + SHEET_GAP) + SHEET_GAP,
        SHEET_COLUMNS * (width + SHEET_GAP) + SHEET_GAP,
        3,
    )
    for k in range(10):
        y, x = tile_origin(k // SHEET_COLUMNS, k % SHEET_COLUMNS, (height, width), True)
        np.testing.assert_array_equal(sheet[y : y + height, x : x + width], sample["video"][k])
        band = sheet[y + height : y + height + CAPTION_HEIGHT, x : x + width]
        assert (band > 200).any()  # the frame number is written there
    # One picture, not an animation.
    assert getattr(Image.open(tmp_path / "sheet.png"), "n_frames", 1) == 1


def test_arguments_are_checked_and_nothing_is_left(root, tmp_path):
    w = VideoWindows(root, window_length=4)
    with pytest.raises(ValueError, match=r"must end in \.webp, \.gif, \.png"):
        save_window(w, 0, tmp_path / "w.mp4")
    with pytest.raises(ValueError, match=r"fps must be a number > 0, got 0"):
        save_window(w, 0, tmp_path / "w.webp", fps=0)
    with pytest.raises(ValueError, match=r"quality must be an integer from 0 to 100, got 101"):
        save_window(w, 0, tmp_path / "w.webp", quality=101)
    with pytest.raises(IndexError):
        save_window(w, len(w), tmp_path / "w.webp")
    assert list(tmp_path.iterdir()) == []


def test_a_sample_is_described_without_its_pixels(root):
    sample = VideoWindows(root, window_length=4)[2]
    rows = dict(describe_sample(sample))
    assert rows["video"] == "uint8 array (4, 32, 48, 3)"
    assert rows["frame_indices"] == "[2, 3, 4, 5]"
    assert rows["label"] == "0" and rows["split"] == "val"
    assert list(rows) == list(sample)


def test_the_card_preview_uses_the_same_sheet(root):
    png = hf_lvf.card.render_preview(root, max_videos=2, frames_per_video=3, tile_width=48)
    sheet = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert sheet.shape == (2 * (32 + SHEET_GAP) + SHEET_GAP, 3 * (48 + SHEET_GAP) + SHEET_GAP, 3)
