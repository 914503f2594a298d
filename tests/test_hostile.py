"""Roots that lie or were written wrong: memory bounded before allocation, rows verified.

Each test is a row of issue 13's table tried again: a named error (or the right data),
never a ``MemoryError``, a crash or a wrong frame.
"""

from __future__ import annotations

import io
import json

import lance
import numpy as np
import pyarrow as pa
import pytest
from _roots import (
    FRAME_SIZE,
    foreign_videos,
    hf_root,
    oracle_sample,
    oracle_windows,
    read_meta,
    write_foreign_root,
)

import hf_lvf
from hf_lvf import VideoWindows
from hf_lvf.errors import LayoutError
from hf_lvf.plan import DEFAULT_MAX_FRAME_PIXELS, crop_box


def _declare(root, video_idx, **fields):
    meta_path = root / "_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["videos"][video_idx].update(fields)
    meta_path.write_text(json.dumps(meta))
    return root


# --- memory: declared sizes, frame_size, batches -------------------------------------------


@pytest.mark.parametrize("side", [100_000, 20_000])
def test_declared_size_beyond_webp_is_refused_at_open(tmp_path, side):
    root = _declare(hf_root(tmp_path / "r"), 1, H=side, W=side)
    with pytest.raises(
        LayoutError,
        match=rf"videos\[1\] \(key 'clip_1'\) declares frames of {side}x{side} \(HxW\), but a "
        r"WebP image has at most 16383 pixels per side",
    ):
        VideoWindows(root)


def test_declared_size_above_the_pixel_limit_is_refused_at_open(tmp_path):
    # 10000x10000 is a valid WebP size: the pixel limit is what stops it, from the numbers.
    root = _declare(hf_root(tmp_path / "r"), 2, H=10_000, W=10_000)
    with pytest.raises(
        LayoutError,
        match=r"videos\[2\] \('clip_2'\) declares 10000x10000 \(HxW\) = 100,000,000 pixels per "
        r"frame, above max_frame_pixels=33,554,432; .* pass a larger max_frame_pixels=",
    ):
        VideoWindows(root, window_length=2)
    # Every video counts, also one too short for a window (clip_1 has 3 frames).
    root = _declare(hf_root(tmp_path / "s"), 1, H=10_000, W=10_000)
    with pytest.raises(LayoutError, match=r"videos\[1\] \('clip_1'\) declares 10000x10000"):
        VideoWindows(root, window_length=5, frame_size=(8, 8))


def test_pixel_limit_is_adjustable(tmp_path):
    root = hf_root(tmp_path / "r")
    pixels = FRAME_SIZE[0] * FRAME_SIZE[1]
    with pytest.raises(LayoutError, match=rf"= {pixels:,} pixels per frame, above "):
        VideoWindows(root, max_frame_pixels=pixels - 1)
    w = VideoWindows(root, max_frame_pixels=pixels)
    assert w[0]["video"].shape == (1, *FRAME_SIZE, 3)
    assert DEFAULT_MAX_FRAME_PIXELS == 2**25 >= 7680 * 4320


def test_lie_within_the_limits_still_gets_a_named_error_not_memory(tmp_path):
    # A moderate lie passes the limits, but the batch is sized from the declared numbers and
    # the frames' own headers disagree: a FrameDecodeError naming the frame.
    root = _declare(hf_root(tmp_path / "r", (12,)), 0, H=2000, W=3000)
    with pytest.raises(hf_lvf.FrameDecodeError, match="frame 0 of video 0 .* declares 3000x2000"):
        VideoWindows(root, window_length=2, max_batch_bytes=2**30)[0]


def test_huge_frame_size_is_refused_before_opening_anything(tmp_path):
    missing = tmp_path / "no_such_root"
    with pytest.raises(
        ValueError,
        match=r"frame_size=\(1000000, 1000000\) is 1000000x1000000 \(HxW\) = "
        r"1,000,000,000,000 pixels per frame, above max_frame_pixels=33,554,432",
    ):
        VideoWindows(missing, frame_size=(10**6, 10**6))
    with pytest.raises(ValueError, match="max_frame_pixels must be an integer >= 1, got 0"):
        VideoWindows(missing, max_frame_pixels=0)
    with pytest.raises(ValueError, match="max_batch_bytes must be an integer >= 1, got -5"):
        VideoWindows(missing, max_batch_bytes=-5)


def test_huge_frame_size_in_load_dataset(tmp_path):
    from datasets import load_dataset

    root = hf_root(tmp_path / "r")
    with pytest.raises(ValueError, match="above max_frame_pixels=33,554,432"):
        load_dataset("hf_lvf", data_dir=str(root), frame_size=(10**6, 10**6), split="train")


def test_batch_byte_bound(tmp_path):
    root = hf_root(tmp_path / "r")
    frame_bytes = FRAME_SIZE[0] * FRAME_SIZE[1] * 3
    # One window always has to fit: refused at open, naming the numbers.
    with pytest.raises(
        ValueError,
        match=rf"one window of .* is too large to read: 4 frames of 32x48 \(HxW\) RGB need "
        rf"0.00 GiB, above max_batch_bytes={3 * frame_bytes:,}",
    ):
        VideoWindows(root, window_length=4, max_batch_bytes=3 * frame_bytes)
    w = VideoWindows(root, window_length=4, max_batch_bytes=8 * frame_bytes)
    assert len(w.take([0, 1])) == 2
    with pytest.raises(ValueError, match=r"reading 3 windows of .* at once: 12 frames of"):
        w.take([0, 1, 2])


# --- rows are what they claim ----------------------------------------------------------------


def _shuffle_rows(root, order):
    """Rewrite the Lance table of ``root`` with its rows in ``order`` (a bad merge)."""
    table = lance.dataset(str(root)).to_table()
    lance.write_dataset(table.take(pa.array(order)), str(root), mode="overwrite")


def test_rows_out_of_order_are_refused(tmp_path):
    videos = foreign_videos((6, 5), with_metadata=False)
    root = write_foreign_root(tmp_path / "r", videos)
    # Video 1's rows first, then video 0's: every row count and size still matches.
    _shuffle_rows(root, [*range(6, 11), *range(6)])
    w = VideoWindows(root, window_length=2)
    with pytest.raises(
        LayoutError,
        match=r"Lance row 0 of root .* holds video_id 1, frame_idx 0, but _metadata.json places "
        r"frame 0 of video 0 \('/footage/cam0/take_00.mkv', id 0\) there: the rows are not in "
        r"\(video, frame\) order",
    ):
        w[0]


def test_frames_swapped_within_a_video_are_refused(tmp_path):
    root = write_foreign_root(tmp_path / "r", foreign_videos((6,), with_metadata=False))
    _shuffle_rows(root, [0, 1, 3, 2, 4, 5])
    w = VideoWindows(root, window_length=2)
    assert w[0]["start_frame"] == 0  # rows 0 and 1 are right
    with pytest.raises(LayoutError, match="Lance row 2 of root .* holds video_id 0, frame_idx 3"):
        list(w)


def test_duplicate_video_ids_are_refused_at_open(tmp_path):
    root = _declare(hf_root(tmp_path / "r"), 2, id=0)
    with pytest.raises(
        LayoutError,
        match=r"videos\[2\] \('clip_2'\) has id 0, the id of videos\[0\] \('clip_0'\): video ids "
        "must be unique",
    ):
        VideoWindows(root)


def test_verified_reads_return_the_right_frames(tmp_path):
    root = write_foreign_root(tmp_path / "r", foreign_videos())
    w = VideoWindows(root, window_length=3, hop_size=2)
    meta = read_meta(root)
    windows = oracle_windows(meta, window_length=3, frame_skip=0, hop_size=2, min_video_frames=None)
    for i in (0, len(w) // 2, len(w) - 1):
        want = oracle_sample(root, meta, windows, i)
        np.testing.assert_array_equal(w[i]["video"], want["video"])


# --- one frame size, by choice, when reading ----------------------------------------------


def test_center_crop_on_read(tmp_path):
    from PIL import Image

    videos = foreign_videos((4, 5), with_metadata=False)
    videos[1]["frames"] = [f.transpose(1, 0, 2).copy() for f in videos[1]["frames"]]  # 48x32
    root = write_foreign_root(tmp_path / "r", videos)
    with pytest.raises(ValueError, match="crop='center'.*resize=N, crop='center'"):
        VideoWindows(root, window_length=2)
    with pytest.raises(ValueError, match=r"crop='center' needs frame_size=\(H, W\)"):
        VideoWindows(root, crop="center")
    with pytest.raises(ValueError, match=r"crop must be one of \('none', 'center'\), got 'middle'"):
        VideoWindows(root, frame_size=(24, 24), crop="middle")
    w = VideoWindows(root, window_length=2, frame_size=(24, 24), crop="center")
    assert "crop='center'" in repr(w)
    table = lance.dataset(str(root)).to_table()
    for i in range(len(w)):
        sample = w[i]
        assert sample["video"].shape == (2, 24, 24, 3)
        v, start = sample["video_idx"], sample["start_frame"]
        row = [0, 4][v] + start
        image = Image.open(io.BytesIO(table["bytes"][row].as_py())).convert("RGB")
        # The middle of a 32x48 frame is its columns 8..40; of a 48x32 one, its rows 8..40.
        box = (8, 0, 40, 32) if v == 0 else (0, 8, 32, 40)
        assert crop_box(image.height, image.width, 24, 24, "center") == box
        want = image.resize((24, 24), Image.Resampling.BILINEAR, box=box)
        np.testing.assert_array_equal(sample["video"][0], np.asarray(want))


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_center_crop_in_load_dataset(tmp_path, streaming):
    from _loading import assert_rows_equal
    from datasets import load_dataset

    videos = foreign_videos((4, 5))
    videos[1]["frames"] = [f.transpose(1, 0, 2).copy() for f in videos[1]["frames"]]
    root = write_foreign_root(tmp_path / "r", videos)
    params = {"window_length": 2, "frame_size": (24, 24), "crop": "center"}
    with pytest.raises(ValueError, match="crop='center' needs frame_size"):
        load_dataset("hf_lvf", data_dir=str(root), split="train", crop="center")
    ds = load_dataset("hf_lvf", data_dir=str(root), split="train", streaming=streaming, **params)
    assert_rows_equal(ds, list(VideoWindows(root, **params)))
    if not streaming:
        assert ds.features["video"].crop == "center"


def test_raised_pixel_limit_reaches_map_style_decoding(tmp_path):
    from datasets import load_dataset

    root = hf_root(tmp_path / "r")
    pixels = FRAME_SIZE[0] * FRAME_SIZE[1]
    with pytest.raises(LayoutError, match="above max_frame_pixels"):
        load_dataset("hf_lvf", data_dir=str(root), split="train", max_frame_pixels=pixels - 1)
    ds = load_dataset("hf_lvf", data_dir=str(root), split="train", max_frame_pixels=pixels)
    assert ds.features["video"].max_frame_pixels == pixels
    np.testing.assert_array_equal(ds[0]["video"], VideoWindows(root)[0]["video"])
