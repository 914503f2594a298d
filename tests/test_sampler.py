"""``hf_lvf.ClipSampler`` on roots written with ``write_frames``: draws, splits, DataLoaders."""

from __future__ import annotations

import numpy as np
import pytest
from _clips import LENGTHS, clips_root, oracle_uniform, per_video_counts
from _loading import run_script

from hf_lvf import ClipSampler, VideoWindows, safe_dataloader

LOADER_TIMEOUT = 60


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return clips_root(tmp_path_factory.mktemp("sampler") / "clips")


@pytest.fixture(scope="module")
def windows(root) -> VideoWindows:
    # Videos of 5, 7 and 1 frames are shorter than a window: they yield none.
    return VideoWindows(root, window_length=8, hop_size=2)


def _counts(windows, indices) -> list[int]:
    return per_video_counts(list(indices), windows.plan.first_window)


@pytest.mark.parametrize("shuffle", [False, True])
def test_random_draws_min_n_k_distinct_windows_per_video_each_epoch(windows, shuffle):
    n = windows.plan.windows_per_video
    assert n.tolist() == [17, 0, 8, 3, 0, 27, 0, 12]
    sampler = ClipSampler(windows, clips_per_video=4, seed=5, shuffle=shuffle)
    assert len(sampler) == 4 + 0 + 4 + 3 + 0 + 4 + 0 + 4
    draws = []
    for epoch in range(4):
        sampler.set_epoch(epoch)
        chosen = list(sampler)
        assert len(chosen) == len(sampler) == len(set(chosen))
        assert _counts(windows, chosen) == np.minimum(n, 4).tolist()
        assert (chosen == sorted(chosen)) is not shuffle
        again = ClipSampler(windows, clips_per_video=4, seed=5, shuffle=shuffle)
        again.set_epoch(epoch)
        assert list(again) == chosen  # the same (seed, epoch): the same draw and order
        draws.append(frozenset(chosen))
    assert len(set(draws)) == 4  # a new draw every epoch
    other_seed = ClipSampler(windows, clips_per_video=4, seed=6, shuffle=shuffle)
    assert frozenset(other_seed) != draws[0]


def test_uniform_is_floor_linspace_every_epoch(windows):
    sampler = ClipSampler(windows, clips_per_video=5, mode="uniform", shuffle=False)
    want = oracle_uniform(windows.plan.windows_per_video.tolist(), 5)
    assert want[10:15] == [25, 25, 26, 26, 27]  # the video of 3 windows repeats them
    for epoch in (0, 3):
        sampler.set_epoch(epoch)
        assert list(sampler) == want
    shuffled = ClipSampler(windows, clips_per_video=5, mode="uniform")
    first = list(shuffled)
    shuffled.set_epoch(1)
    assert sorted(first) == sorted(list(shuffled)) == sorted(want) and first != list(shuffled)


@pytest.mark.parametrize("mode", ["random", "uniform"])
def test_two_replicas_split_one_selection(windows, mode):
    # 4 + 4 + 3 + 4 + 4 = 19 clips of 3: even; in the odd case nothing is padded (every window
    # once an epoch, rank 1 one short: the elastic rule), or drop_last drops the tail.
    for k, drop_last in [(4, False), (3, False), (3, True)]:
        single = ClipSampler(windows, clips_per_video=k, mode=mode, seed=2, num_replicas=1, rank=0)
        parts = []
        for rank in (0, 1):
            part = ClipSampler(
                windows,
                clips_per_video=k,
                mode=mode,
                seed=2,
                num_replicas=2,
                rank=rank,
                drop_last=drop_last,
            )
            part.set_epoch(3)
            parts.append(list(part))
            assert len(part) == len(parts[-1])
        single.set_epoch(3)
        whole = list(single)
        if len(whole) % 2 == 0:  # together the single-replica selection, disjointly
            assert sorted(parts[0] + parts[1]) == sorted(whole)
            assert parts[0] == whole[0::2] and parts[1] == whole[1::2]
        elif drop_last:  # the tail dropped, as DistributedSampler drops it
            assert parts[0] + parts[1] != [] and sorted(parts[0] + parts[1]) == sorted(whole[:-1])
        else:  # not padded: every window once, rank 0 takes the last one
            assert parts[0] == whole[0::2] and parts[1] == whole[1::2]
            assert len(parts[0]) == len(parts[1]) + 1


def test_replicas_default_without_torch_distributed(windows):
    sampler = ClipSampler(windows)
    assert (sampler.num_replicas, sampler.rank) == (1, 0)


def test_needs_no_torch_to_exist(root):
    out = run_script(
        f"""
        import json, sys, hf_lvf
        w = hf_lvf.VideoWindows({str(root)!r}, window_length=8, hop_size=2)
        s = hf_lvf.ClipSampler(w, clips_per_video=2, seed=1)
        s.set_epoch(2)
        print(json.dumps({{"n": len(list(s)), "len": len(s), "torch": "torch" in sys.modules}}))
        """
    )
    assert out == {"n": 10, "len": 10, "torch": False}


def test_pixels_through_a_two_worker_dataloader(windows):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    sampler = ClipSampler(windows, clips_per_video=2, seed=4)
    want = {i: windows[i]["video"] for i in range(len(windows))}
    loader = safe_dataloader(
        windows, sampler=sampler, batch_size=4, num_workers=2, timeout=LOADER_TIMEOUT
    )
    plain = DataLoader(windows, sampler=sampler, batch_size=4)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        order = list(sampler)
        for load in (loader, plain):
            seen = []
            for batch in load:
                assert batch["video"].dtype == torch.uint8
                for i, video in zip(batch["sample_idx"].tolist(), batch["video"], strict=True):
                    np.testing.assert_array_equal(video.numpy(), want[i])
                    seen.append(i)
            assert seen == order


def test_each_batch_is_one_lance_read(windows, monkeypatch):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from hf_lvf.frames import FrameReader

    reads = []
    original = FrameReader.read
    monkeypatch.setattr(
        FrameReader, "read", lambda self, rows: reads.append(1) or original(self, rows)
    )
    view = VideoWindows(windows.uri, window_length=8, hop_size=2)
    loader = DataLoader(view, sampler=ClipSampler(view, clips_per_video=3, seed=1), batch_size=4)
    batches = list(loader)
    assert len(batches) == len(reads) == 4  # 15 clips in batches of 4: one read each


def test_padded_short_videos_and_fps(root):
    w = VideoWindows(root, window_length=8, short_videos="pad")
    # Every video with a frame has a window now; the 5-frame video's is padded.
    assert w.plan.windows_per_video.tolist() == [33, 1, 16, 5, 1, 54, 1, 23]
    chosen = list(ClipSampler(w, clips_per_video=2, seed=0, shuffle=False))
    assert _counts(w, chosen) == [2, 1, 2, 2, 1, 2, 1, 2]
    short = w[int(w.plan.first_window[1])]
    assert short["frame_indices"].tolist() == [0, 1, 2, 3, 4, 4, 4, 4]
    assert short["frame_is_pad"].tolist() == [False] * 5 + [True] * 3
    timed = VideoWindows(root, window_length=4, fps=10)
    uniform = list(ClipSampler(timed, clips_per_video=2, mode="uniform", shuffle=False))
    assert uniform == oracle_uniform(timed.plan.windows_per_video.tolist(), 2)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"clips_per_video": 0}, ValueError, r"clips_per_video must be an integer >= 1, got 0"),
        ({"mode": "even"}, ValueError, r"mode must be 'random' or 'uniform', got 'even'"),
        ({"seed": -1}, ValueError, r"seed must be an integer >= 0, got -1"),
        ({"shuffle": 1}, ValueError, r"shuffle must be True or False, got 1"),
        ({"drop_last": None}, ValueError, r"drop_last must be True or False, got None"),
        ({"num_replicas": 0, "rank": 0}, ValueError, r"num_replicas must be an integer >= 1"),
        ({"num_replicas": 2, "rank": 2}, ValueError, r"rank must be in \[0, 1\], got 2"),
        ({"num_replicas": 2}, ValueError, r"rank= is needed with num_replicas=2"),
        ({"rank": 1}, ValueError, r"num_replicas= is needed with rank=1"),
    ],
)
def test_bad_arguments(windows, kwargs, error, match):
    with pytest.raises(error, match=match):
        ClipSampler(windows, **kwargs)
    with pytest.raises(TypeError, match="samples the windows of a hf_lvf.VideoWindows, got list"):
        ClipSampler([1, 2, 3])
    sampler = ClipSampler(windows)
    with pytest.raises(ValueError, match=r"epoch must be an integer >= 0, got -1"):
        sampler.set_epoch(-1)


def test_lengths_match_the_root(windows):
    assert windows.layout.num_frames.tolist() == list(LENGTHS)
