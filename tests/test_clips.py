"""The plan layer of issue 18: clips per video, the replica split, virtual frames (pure numpy)."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from _clips import oracle_uniform, oracle_virtual_windows, per_video_counts

from hf_lvf import WindowParams
from hf_lvf.errors import LayoutError
from hf_lvf.plan import make_timeline, plan_windows
from hf_lvf.plan.clips import ClipSampling, clip_shards, replica_indices, replica_length

COUNTS = np.array([9, 2, 0, 19, 4, 1, 0, 30, 3])


def _plan(windows_per_video=COUNTS):
    # window_length=1, hop 1: a video of n frames has n windows.
    return plan_windows(np.asarray(windows_per_video), WindowParams())


# --- random clips -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 5, 40])
def test_random_draws_min_n_k_distinct_windows_per_video(k):
    plan = _plan()
    sampling = ClipSampling(clips_per_video=k, mode="random")
    draws = []
    for epoch in range(6):
        chosen = sampling.select(plan, rng=np.random.default_rng([7, epoch]))
        assert len(set(chosen.tolist())) == len(chosen)  # distinct
        assert per_video_counts(chosen, plan.first_window) == np.minimum(COUNTS, k).tolist()
        assert chosen.tolist() == sorted(chosen.tolist())  # video by video, ascending
        again = sampling.select(plan, rng=np.random.default_rng([7, epoch]))
        assert again.tolist() == chosen.tolist()  # same (seed, epoch), same draw
        draws.append(tuple(chosen.tolist()))
    if k < 30:
        assert len(set(draws)) == 6  # a new draw every epoch


def test_random_subsets_are_uniform():
    # 6000 videos of 5 windows, 2 clips each: each of the 10 pairs about 600 times.
    plan = _plan([5] * 6000)
    chosen = ClipSampling(clips_per_video=2).select(plan, rng=np.random.default_rng(1))
    pairs = Counter(map(tuple, (chosen.reshape(-1, 2) - plan.first_window[:-1, None]).tolist()))
    assert sorted(pairs) == [(a, b) for a in range(5) for b in range(a + 1, 5)]
    assert all(500 < count < 700 for count in pairs.values())  # 4+ sigma either way


def test_random_draw_of_a_range_of_videos_equals_the_whole():
    plan = _plan()
    sampling = ClipSampling(clips_per_video=3)
    whole = sampling.select(plan, rng=np.random.default_rng([3, 1]))
    parts = [
        sampling.select(plan, rng=np.random.default_rng([3, 1]), videos=bounds)
        for bounds in [(0, 2), (2, 3), (3, 8), (8, 9)]
    ]
    assert np.concatenate(parts).tolist() == whole.tolist()


def test_random_needs_a_generator():
    with pytest.raises(TypeError, match="needs rng="):
        ClipSampling(clips_per_video=2).select(_plan())


# --- uniform clips ----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 15, 40])
def test_uniform_is_floor_linspace(k):
    plan = _plan()
    chosen = ClipSampling(clips_per_video=k, mode="uniform").select(plan)
    assert chosen.tolist() == oracle_uniform(COUNTS.tolist(), k)


def test_uniform_equals_np_linspace_bit_for_bit():
    # Where float linspace lands just below an integer (n=123, k=15: 60.999...), ours does too.
    counts = np.arange(1, 500)
    plan = _plan(counts)
    for k in (2, 3, 15, 23, 29):
        got = ClipSampling(clips_per_video=k, mode="uniform").select(plan)
        assert got.tolist() == oracle_uniform(counts.tolist(), k), k


def test_clip_counts():
    assert ClipSampling(clips_per_video=3).counts(COUNTS).tolist() == [3, 2, 0, 3, 3, 1, 0, 3, 3]
    uniform = ClipSampling(clips_per_video=3, mode="uniform")
    assert uniform.counts(COUNTS).tolist() == [3, 3, 0, 3, 3, 3, 0, 3, 3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clips_per_video": 0}, r"clips_per_video must be an integer >= 1, got 0"),
        ({"clips_per_video": 1.5}, r"clips_per_video must be an integer >= 1, got 1.5"),
        ({"clips_per_video": True}, r"clips_per_video must be an integer >= 1, got True"),
        ({"mode": "even"}, r"clip_sampling must be 'random' or 'uniform', got 'even'"),
    ],
)
def test_bad_clip_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ClipSampling(**kwargs)


def test_clip_shards_cut_at_videos():
    counts = np.array([2, 2, 0, 2, 1, 0])
    shards = clip_shards(counts, 3)
    assert shards == [(0, 2, 4), (2, 4, 2), (4, 6, 1)]
    for per_shard in (1, 2, 5, 100):
        shards = clip_shards(counts, per_shard)
        assert [lo for lo, _, _ in shards] == [0] + [hi for _, hi, _ in shards[:-1]]
        assert shards[-1][1] == len(counts) and all(n > 0 for *_, n in shards)
        assert sum(n for *_, n in shards) == counts.sum()


# --- the DistributedSampler split --------------------------------------------------------------


@pytest.mark.parametrize("total", [0, 1, 5, 12, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 5, 16])
@pytest.mark.parametrize("drop_last", [False, True])
def test_replica_split_is_torchs(total, replicas, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    indices = np.random.default_rng(total).permutation(100)[:total]
    for rank in range(replicas):
        torch_sampler = DistributedSampler(
            range(total), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last
        )
        want = [int(indices[p]) for p in torch_sampler]
        assert replica_indices(indices, replicas, rank, drop_last).tolist() == want
        assert replica_length(total, replicas, drop_last) == len(torch_sampler)
    del torch


# --- virtual frames: short videos padded, fps= --------------------------------------------------


def _windows(plan):
    idx = np.arange(len(plan))
    video_idx, start = plan.locate(idx)
    frames = plan.frame_indices(start, video_idx)
    return video_idx, frames, plan.sample_columns(video_idx, start)


def test_a_short_video_padded():
    plan = plan_windows(np.array([5]), WindowParams(window_length=8, short_videos="pad"))
    video_idx, frames, columns = _windows(plan)
    assert frames.tolist() == [[0, 1, 2, 3, 4, 4, 4, 4]]
    assert columns["frame_is_pad"].tolist() == [[False] * 5 + [True] * 3]
    assert list(columns) == ["frame_is_pad"]


@pytest.mark.parametrize("min_video_frames", [None, 3, 6])
def test_padding_keeps_min_video_frames_and_full_windows(min_video_frames):
    lengths = [5, 0, 8, 10, 2]
    params = WindowParams(
        window_length=4,
        frame_skip=1,
        hop_size=2,
        min_video_frames=min_video_frames,
        short_videos="pad",
    )
    plan = plan_windows(np.array(lengths), params)
    video_idx, frames, columns = _windows(plan)
    want = oracle_virtual_windows(
        lengths, None, fps=None, window_length=4, frame_skip=1, hop_size=2, pad=True
    )
    want = [w for w in want if lengths[w["video_idx"]] >= (min_video_frames or 0)]
    assert video_idx.tolist() == [w["video_idx"] for w in want]
    assert frames.tolist() == [w["frame_indices"] for w in want]
    assert columns["frame_is_pad"].tolist() == [w["frame_is_pad"] for w in want]
    # Without pad, the numbering is the plain plan's.
    plain = plan_windows(
        np.array(lengths),
        WindowParams(window_length=4, frame_skip=1, hop_size=2, min_video_frames=min_video_frames),
    )
    assert plain.timeline is None
    assert len(plain) == sum(not any(w["frame_is_pad"]) for w in want)


RATES = [30, 25, 29.97, 29.97002997002997, 23.976023976023978, 59.94, 12.5]


@pytest.mark.parametrize("fps", [10, 30, 7.5, 29.97, 24])
@pytest.mark.parametrize("pad", [False, True])
def test_fps_is_the_exact_formula(fps, pad):
    lengths = [90, 40, 301, 250, 17, 120, 3]
    params = WindowParams(
        window_length=5, frame_skip=2, hop_size=3, fps=fps, short_videos="pad" if pad else "drop"
    )
    plan = plan_windows(np.array(lengths), params, video_fps=np.array(RATES, float))
    video_idx, frames, columns = _windows(plan)
    want = oracle_virtual_windows(
        lengths, RATES, fps=fps, window_length=5, frame_skip=2, hop_size=3, pad=pad
    )
    assert video_idx.tolist() == [w["video_idx"] for w in want]
    assert frames.tolist() == [w["frame_indices"] for w in want]
    assert columns["timestamps"].dtype == np.float64
    assert columns["timestamps"].tolist() == [w["timestamps"] for w in want]
    assert ("frame_is_pad" in columns) == pad


def test_fps_has_no_drift_at_any_frame():
    # Every virtual frame of long videos, including rates whose fractions overflow int64.
    lengths = [2_000_003, 1_000_000, 500_001]
    rates = [29.97, 29.97002997002997, 23.976023976023978]
    timeline = make_timeline(np.array(lengths), fps=10.0, pad=False, video_fps=np.array(rates))
    for v, (t, rate) in enumerate(zip(lengths, rates, strict=True)):
        exact = Fraction(repr(rate)) / 10
        virtual = int(timeline.virtual_frames[v])
        assert virtual == math.ceil(t / exact)
        m = np.concatenate([np.arange(0, virtual, 997), [virtual - 1]])[:, None]
        got = timeline.frames(np.full(len(m), v), m)[0][:, 0]
        assert got.tolist() == [math.floor(int(x) * exact) for x in m[:, 0]]
        assert int(got.max()) <= t - 1


def test_fps_equal_to_every_videos_rate_is_the_plain_plan():
    lengths = np.array([40, 5, 23, 12])
    for rate in (30, 29.97, 25):
        params = dict(window_length=4, frame_skip=1, hop_size=3)
        timed = plan_windows(
            lengths, WindowParams(**params, fps=rate), video_fps=np.full(4, float(rate))
        )
        plain = plan_windows(lengths, WindowParams(**params))
        assert timed.windows_per_video.tolist() == plain.windows_per_video.tolist()
        _, timed_frames, _ = _windows(timed)
        _, plain_frames, _ = _windows(plain)
        assert timed_frames.tolist() == plain_frames.tolist()


def test_a_video_without_fps_is_a_named_layout_error():
    rates = np.array([30.0, np.nan, 25.0])
    with pytest.raises(LayoutError, match=r"videos\[1\] \('b.mp4'\) has no frame rate: fps=10"):
        plan_windows(
            np.array([9, 9, 9]),
            WindowParams(fps=10),
            video_fps=rates,
            describe_video=lambda v: f"videos[{v}] ({'abc'[v] + '.mp4'!r})",
        )
    with pytest.raises(LayoutError, match=r"video 0 has no frame rate \(it records -5.0\)"):
        plan_windows(np.array([9]), WindowParams(fps=10), video_fps=np.array([-5.0]))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fps": 0}, r"fps must be a finite number > 0 .* got 0"),
        ({"fps": -2.5}, r"fps must be a finite number > 0 .* got -2.5"),
        ({"fps": float("inf")}, r"fps must be a finite number > 0 .* got inf"),
        ({"fps": "10"}, r"fps must be a finite number > 0 .* got '10'"),
        ({"fps": True}, r"fps must be a finite number > 0 .* got True"),
        ({"short_videos": "repeat"}, r"short_videos must be 'drop' or 'pad', got 'repeat'"),
    ],
)
def test_bad_timing_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WindowParams(window_length=2, **kwargs)
