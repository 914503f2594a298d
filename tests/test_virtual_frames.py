"""``VideoWindows(short_videos="pad", fps=...)`` against the literal oracle, pixels included."""

from __future__ import annotations

import pickle

import datasets
import numpy as np
import pytest
from _clips import LENGTHS, RATES, clips_root, oracle_virtual_windows
from _roots import make_frames, oracle_sample, read_meta

from hf_lvf import VideoWindows
from hf_lvf.errors import LayoutError
from hf_lvf.write import write_frames


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return clips_root(tmp_path_factory.mktemp("virtual") / "clips")


def _oracle(root, want, index):
    """The oracle's sample for ``want[index]`` (a window by the issue's rule): one Lance take
    and one Pillow decode per frame."""
    meta = read_meta(root)
    w = want[index]
    windows = [(w["video_idx"], w["frame_indices"][0], w["frame_indices"])]
    return oracle_sample(root, meta, windows, 0)


def test_a_5_frame_video_with_window_length_8(root):
    w = VideoWindows(root, window_length=8, short_videos="pad")
    index = int(w.plan.first_window[1])  # the 5-frame video: one window
    assert w.plan.windows_per_video[1] == 1
    for sample in (w[index], list(w.iter_samples([index]))[0]):
        assert sample["frame_indices"].dtype == np.int32
        assert sample["frame_indices"].tolist() == [0, 1, 2, 3, 4, 4, 4, 4]
        assert sample["frame_is_pad"].dtype == np.bool_
        assert sample["frame_is_pad"].tolist() == [False] * 5 + [True] * 3
        assert sample["start_frame"] == 0
        oracle = _oracle(root, [{"video_idx": 1, "frame_indices": [0, 1, 2, 3, 4, 4, 4, 4]}], 0)
        np.testing.assert_array_equal(sample["video"], oracle["video"])
    info = w.segment_info(index)
    assert info["frame_indices"].tolist() == [0, 1, 2, 3, 4, 4, 4, 4]
    assert info["frame_is_pad"].tolist() == [False] * 5 + [True] * 3
    full = w[0]
    assert full["frame_is_pad"].tolist() == [False] * 8
    assert list(full)[:7] == [
        "video",
        "video_idx",
        "filename",
        "start_frame",
        "frame_indices",
        "sample_idx",
        "frame_is_pad",
    ]
    assert w.features["frame_is_pad"] == datasets.List(datasets.Value("bool"), length=8)
    assert list(w.features)[6:] == ["frame_is_pad", "label", "fps"]


def test_padded_windows_read_alike_every_way(root):
    # The 1-frame video's window is one frame eight times; a pass hands out copies of it.
    w = VideoWindows(root, window_length=8, hop_size=3, short_videos="pad")
    taken = w.take(range(len(w)))
    for got, want in zip(w.iter_samples(), taken, strict=True):
        np.testing.assert_array_equal(got["frame_indices"], want["frame_indices"])
        np.testing.assert_array_equal(got["video"], want["video"])
        np.testing.assert_array_equal(got["frame_is_pad"], want["frame_is_pad"])
    one = taken[int(w.plan.first_window[6])]
    assert (
        one["frame_indices"].tolist() == [0] * 8
        and one["frame_is_pad"].tolist() == [False] + [True] * 7
    )
    assert all(np.array_equal(frame, one["video"][0]) for frame in one["video"])


@pytest.mark.parametrize(("fps", "pad"), [(10, False), (10, True), (60, False)])
def test_fps_windows_are_the_formula_with_the_oracles_pixels(root, fps, pad):
    params = dict(window_length=4, frame_skip=1, hop_size=3)
    w = VideoWindows(root, **params, fps=fps, short_videos="pad" if pad else "drop")
    want = oracle_virtual_windows(LENGTHS, RATES, fps=fps, pad=pad, **params)
    samples = list(w)
    assert len(samples) == len(w) == len(want)
    assert [s["video_idx"] for s in samples] == [x["video_idx"] for x in want]
    assert [s["frame_indices"].tolist() for s in samples] == [x["frame_indices"] for x in want]
    assert [s["start_frame"] for s in samples] == [x["frame_indices"][0] for x in want]
    assert [s["timestamps"].tolist() for s in samples] == [x["timestamps"] for x in want]
    assert all(s["timestamps"].dtype == np.float64 for s in samples)
    if pad:
        assert [s["frame_is_pad"].tolist() for s in samples] == [x["frame_is_pad"] for x in want]
    else:
        assert "frame_is_pad" not in samples[0]
    for index in (0, 7, len(want) // 2, len(want) - 1):
        np.testing.assert_array_equal(samples[index]["video"], _oracle(root, want, index)["video"])
        np.testing.assert_array_equal(w[index]["video"], samples[index]["video"])
    assert w.features["timestamps"] == datasets.List(datasets.Value("float64"), length=4)


def test_fps_equal_to_the_videos_rate_reads_the_plain_windows(tmp_path):
    root = clips_root(tmp_path / "r", lengths=(12, 30, 9), rates=(25, 25, 25))
    timed = VideoWindows(root, window_length=3, hop_size=2, fps=25)
    plain = VideoWindows(root, window_length=3, hop_size=2)
    for got, want in zip(timed, plain, strict=True):
        stamps = got.pop("timestamps")
        assert stamps.tolist() == [f / 25 for f in want["frame_indices"]]
        assert list(got) == list(want)
        for key, value in want.items():
            np.testing.assert_array_equal(got[key], value)


def test_a_video_without_fps_is_a_named_layout_error(tmp_path):
    root = clips_root(tmp_path / "r", lengths=(12, 9, 10), rates=(30, None, 25))
    with pytest.raises(LayoutError, match=r"videos\[1\] \('clip_1'\) has no frame rate: fps=10"):
        VideoWindows(root, window_length=2, fps=10)
    VideoWindows(root, window_length=2)  # without fps= the root reads as before


def test_a_metadata_field_named_like_a_new_key(tmp_path):
    videos = [("a", iter(make_frames(6, 8, 8, seed=0)), {"fps": 30, "timestamps": "x"})]
    root = write_frames(tmp_path / "r", iter(videos))
    with pytest.raises(LayoutError, match=r"metadata field 'timestamps'.*fps="):
        VideoWindows(root, window_length=2, fps=10)
    VideoWindows(root, window_length=2, short_videos="pad")


def test_views_pickle_with_their_options(root):
    w = VideoWindows(root, window_length=4, fps=12.5, short_videos="pad")
    clone = pickle.loads(pickle.dumps(w))
    assert clone.params == w.params and clone.params.fps == 12.5
    assert len(clone) == len(w)
    np.testing.assert_array_equal(clone[5]["timestamps"], w[5]["timestamps"])


def test_new_keys_collate(root):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    w = VideoWindows(root, window_length=8, short_videos="pad", fps=20)
    batch = next(iter(DataLoader(w, batch_size=5)))
    assert batch["frame_is_pad"].dtype == torch.bool and batch["frame_is_pad"].shape == (5, 8)
    assert batch["timestamps"].dtype == torch.float64 and batch["timestamps"].shape == (5, 8)
