"""The segment plan: numbering against a brute-force loop, parameter checks, scale."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hf_lvf.plan import WindowParams, plan_windows


def brute_force(num_frames, window_length, frame_skip, hop_size, min_video_frames):
    stride = frame_skip + 1
    span = (window_length - 1) * stride + 1
    needed = max(span, min_video_frames or span)
    windows = []
    for video_idx, frames in enumerate(num_frames):
        if frames >= needed:
            for start in range(0, frames - span + 1, hop_size):
                windows.append(
                    (video_idx, start, [start + j * stride for j in range(window_length)])
                )
    return windows


def random_case(rng: random.Random):
    num_frames = [rng.choice([0, 1, 2, rng.randrange(0, 60)]) for _ in range(rng.randrange(1, 7))]
    params = dict(
        window_length=rng.randrange(1, 7),
        frame_skip=rng.randrange(0, 4),
        hop_size=rng.randrange(1, 6),
        min_video_frames=rng.choice([None, 0, rng.randrange(0, 40)]),
    )
    return num_frames, params


@pytest.mark.parametrize("seed", range(4))
def test_numbering_matches_brute_force(seed):
    rng = random.Random(seed)
    for _ in range(100):
        num_frames, kwargs = random_case(rng)
        want = brute_force(num_frames, **kwargs)
        plan = plan_windows(np.array(num_frames), WindowParams(**kwargs))
        assert len(plan) == len(want)
        assert plan.first_window[0] == 0 and plan.first_window[-1] == len(want)
        counts = [sum(1 for v, _, _ in want if v == video) for video in range(len(num_frames))]
        assert plan.windows_per_video.tolist() == counts
        for video in range(len(num_frames)):
            assert [want[i][0] for i in plan.video_windows(video)] == [video] * counts[video]
        if not want:
            continue
        idx = plan.normalize(np.arange(len(want)))
        video_idx, start_frame = plan.locate(idx)
        assert video_idx.tolist() == [v for v, _, _ in want]
        assert start_frame.tolist() == [s for _, s, _ in want]
        assert plan.frame_indices(start_frame).tolist() == [f for _, _, f in want]
        negative = -np.arange(1, len(want) + 1)
        assert plan.normalize(negative).tolist() == [len(want) - k for k in range(1, len(want) + 1)]


def test_docstring_example():
    plan = plan_windows(np.array([10, 3]), WindowParams(window_length=4, hop_size=3))
    assert (plan.windows_per_video.tolist(), len(plan)) == ([3, 0], 3)


def test_min_video_frames():
    frames = np.array([5, 6, 7])
    span3 = dict(window_length=3)
    assert plan_windows(frames, WindowParams(**span3)).windows_per_video.tolist() == [3, 4, 5]
    # 0 and None both mean "at least one window long".
    assert plan_windows(
        frames, WindowParams(**span3, min_video_frames=0)
    ).windows_per_video.tolist() == [3, 4, 5]
    assert plan_windows(
        frames, WindowParams(**span3, min_video_frames=6)
    ).windows_per_video.tolist() == [0, 4, 5]
    # A threshold below the span does not let a shorter video in.
    assert plan_windows(
        frames, WindowParams(window_length=6, min_video_frames=2)
    ).windows_per_video.tolist() == [0, 1, 2]


def test_ten_million_windows():
    frames = np.full(1000, 10_000)
    plan = plan_windows(frames, WindowParams(window_length=1, hop_size=1))
    assert len(plan) == 10_000_000
    assert plan.windows_per_video.tolist() == [10_000] * 1000
    idx = plan.normalize(np.array([0, 9_999, 10_000, 5_432_109, -1]))
    video_idx, start_frame = plan.locate(idx)
    assert video_idx.tolist() == [0, 0, 1, 543, 999]
    assert start_frame.tolist() == [0, 9_999, 0, 2_109, 9_999]

    plan = plan_windows(frames, WindowParams(window_length=16, frame_skip=1, hop_size=1))
    assert len(plan) == 1000 * (10_000 - 31 + 1)
    video_idx, start_frame = plan.locate(plan.normalize(np.array([-1])))
    assert (int(video_idx[0]), int(start_frame[0])) == (999, 10_000 - 31)
    assert plan.frame_indices(start_frame)[0, -1] == 9_999


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window_length": 0}, "window_length must be >= 1, got 0"),
        ({"window_length": -3}, "window_length must be >= 1, got -3"),
        ({"frame_skip": -1}, "frame_skip must be >= 0, got -1"),
        ({"hop_size": 0}, "hop_size must be >= 1, got 0"),
        ({"min_video_frames": -1}, "min_video_frames must be >= 0, got -1"),
        ({"window_length": 2.0}, r"window_length must be an integer >= 1, got 2\.0"),
        ({"frame_skip": "1"}, "frame_skip must be an integer >= 0, got '1'"),
        ({"hop_size": True}, "hop_size must be an integer >= 1, got True"),
        ({"min_video_frames": 3.5}, r"min_video_frames must be an integer >= 0, got 3\.5"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WindowParams(**kwargs)


def test_params_are_keyword_only_and_normalised():
    with pytest.raises(TypeError):
        WindowParams(4)  # type: ignore[misc]
    params = WindowParams(
        window_length=np.int64(4), frame_skip=np.int32(1), min_video_frames=np.uint8(9)
    )
    assert (params.window_length, params.frame_skip, params.min_video_frames) == (4, 1, 9)
    assert all(
        type(v) is int for v in (params.window_length, params.frame_skip, params.min_video_frames)
    )
    assert (params.stride, params.span, params.frame_offsets.tolist()) == (2, 7, [0, 2, 4, 6])


def test_normalize_errors():
    plan = plan_windows(np.array([4, 3]), WindowParams(window_length=2))
    assert len(plan) == 5
    assert plan.normalize([-5, 4]).tolist() == [0, 4]
    with pytest.raises(IndexError, match="window index 5 is out of range for 5 windows"):
        plan.normalize([0, 5])
    with pytest.raises(IndexError, match="window index -6 is out of range for 5 windows"):
        plan.normalize([-6])
    with pytest.raises(TypeError, match="window indices must be integers, got dtype float64"):
        plan.normalize([1.0])
    assert plan.normalize([]).dtype == np.int64
