"""Clips per video, padded short videos and fps= in the ``datasets`` front ends."""

from __future__ import annotations

import datasets
import datasets.distributed
import numpy as np
import pytest
from _clips import clips_root, oracle_uniform, oracle_virtual_windows, per_video_counts
from _loading import PROJECT_ROOT, assert_rows_equal

from hf_lvf import HfLvfConfig, VideoWindows, build_card, safe_dataloader

PARAMS = {"window_length": 4, "hop_size": 2}
LOADER_TIMEOUT = 60


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return clips_root(tmp_path_factory.mktemp("clip_datasets") / "clips")


@pytest.fixture(scope="module")
def core(root) -> VideoWindows:
    return VideoWindows(root, **PARAMS)


@pytest.fixture(autouse=True)
def _from_project_root(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)


def _load(root, *, streaming: bool, **kwargs):
    return datasets.load_dataset(
        "hf_lvf", data_dir=str(root), split="train", streaming=streaming, **{**PARAMS, **kwargs}
    )


def _ids(rows) -> list[int]:
    return [int(row["sample_idx"]) for row in rows]


def _assert_clips(core, ids, k):
    """Exactly min(n, k) distinct windows of each video."""
    assert len(ids) == len(set(ids))
    want = np.minimum(core.plan.windows_per_video, k).tolist()
    assert per_video_counts(ids, core.plan.first_window) == want


# --- streaming: a new draw per epoch, the same everywhere -------------------------------------


def test_streaming_random_clips_over_epochs(root, core):
    ds = _load(root, streaming=True, clips_per_video=2, clip_sampling="random", shard_windows=3)
    assert ds.num_shards == 4
    draws = []
    for epoch in (0, 1, 2, 1):
        ds.set_epoch(epoch)
        rows = list(ds)
        ids = _ids(rows)
        _assert_clips(core, ids, 2)
        if epoch == 0:  # video by video (later epochs, datasets reorders the shards)
            assert ids == sorted(ids)
        assert_rows_equal(rows, core.take(ids))  # the core's windows, pixels and all
        draws.append(ids)
    assert draws[0] != draws[1] != draws[2] and draws[1] == draws[3]


def test_streaming_random_clips_across_two_nodes(root, core):
    ds = _load(root, streaming=True, clips_per_video=2, shard_windows=3)
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        whole = sorted(_ids(ds))
        parts = []
        for rank in (0, 1):
            node = datasets.distributed.split_dataset_by_node(ds, rank=rank, world_size=2)
            node.set_epoch(epoch)
            parts.append(_ids(node))
        assert parts[0] and parts[1]
        assert sorted(parts[0] + parts[1]) == whole  # each chosen window on one node, once
        _assert_clips(core, parts[0] + parts[1], 2)


def test_streaming_clips_through_workers_on_two_nodes(root, core):
    pytest.importorskip("torch")
    ds = _load(root, streaming=True, clips_per_video=2, shard_windows=2)
    nodes = [datasets.distributed.split_dataset_by_node(ds, rank=r, world_size=2) for r in (0, 1)]
    loaders = [
        safe_dataloader(node, batch_size=3, num_workers=2, timeout=LOADER_TIMEOUT) for node in nodes
    ]
    draws = []
    for epoch in (0, 1):  # persistent workers follow set_epoch
        ds.set_epoch(epoch)
        want = sorted(_ids(ds))
        seen = []
        for node, loader in zip(nodes, loaders, strict=True):
            node.set_epoch(epoch)
            for batch in loader:
                seen += batch["sample_idx"].tolist()
        assert sorted(seen) == want
        draws.append(want)
    assert draws[0] != draws[1]


def test_streaming_clips_resume_at_the_exact_window(root):
    kwargs = {"streaming": True, "clips_per_video": 3, "shard_windows": 4}
    ds = _load(root, **kwargs)
    ds.set_epoch(1)
    want = _ids(ds)
    for stop in (1, 5, 9):
        ds = _load(root, **kwargs)
        ds.set_epoch(1)
        it = iter(ds)
        head = [int(next(it)["sample_idx"]) for _ in range(stop)]
        state = ds.state_dict()
        resumed = _load(root, **kwargs)
        resumed.set_epoch(1)
        resumed.load_state_dict(state)
        assert head + _ids(resumed) == want


def test_streaming_clips_shuffled(root, core):
    ds = _load(root, streaming=True, clips_per_video=2, shard_windows=2)
    shuffled = ds.shuffle(seed=4, buffer_size=4)
    orders = []
    for epoch in (0, 1):
        shuffled.set_epoch(epoch)
        rows = list(shuffled)
        ids = _ids(rows)
        _assert_clips(core, ids, 2)
        assert ids != sorted(ids)
        assert_rows_equal(rows, core.take(ids))
        orders.append(ids)
    assert sorted(orders[0]) != sorted(orders[1])


def test_streaming_shards_are_video_ranges(root, core):
    ds = _load(root, streaming=True, clips_per_video=2, shard_windows=3)
    kwargs = ds._ex_iterable.kwargs
    # Clips per video [2, 1, 2, 2, 2, 2, 0, 2]: shards of about 3, cut between videos.
    assert kwargs["shards"] == [(0, 0, 0, 2), (1, 0, 2, 4), (2, 0, 4, 5), (3, 0, 5, 8)]
    assert kwargs["clip_counts"] == [3, 4, 2, 4]
    assert kwargs["clip_draws"] == ()


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_uniform_clips_are_a_fixed_set(root, core, streaming):
    ds = _load(root, streaming=streaming, clips_per_video=3, clip_sampling="uniform")
    want = oracle_uniform(core.plan.windows_per_video.tolist(), 3)
    for epoch in (0, 1):
        ds.set_epoch(epoch) if streaming else None
        rows = list(ds)
        assert _ids(rows) == want
        assert_rows_equal(rows, core.take(want))  # the VideoWindows samples of those windows
    if not streaming:
        assert len(ds) == len(want)
        np.testing.assert_array_equal(np.asarray(ds[4]["video"]), core[want[4]]["video"])


def test_map_style_random_clips_is_an_error(root):
    with pytest.raises(ValueError, match=r"streaming=True.*hf_lvf\.ClipSampler"):
        _load(root, streaming=False, clips_per_video=2, clip_sampling="random")


# --- short videos and fps= -----------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_padded_short_videos_in_load_dataset(root, streaming):
    ds = _load(root, streaming=streaming, window_length=8, hop_size=4, short_videos="pad")
    core = VideoWindows(root, window_length=8, hop_size=4, short_videos="pad")
    assert ds.features["frame_is_pad"] == datasets.List(datasets.Value("bool"), length=8)
    assert list(ds.features)[:7] == [*core.features][:7]
    rows = list(ds)
    short = [row for row in rows if row["video_idx"] == 1]  # 5 frames
    assert [list(row["frame_indices"]) for row in short] == [[0, 1, 2, 3, 4, 4, 4, 4]]
    assert list(short[0]["frame_is_pad"]) == [False] * 5 + [True] * 3
    assert [list(row["frame_is_pad"]) for row in rows] == [s["frame_is_pad"].tolist() for s in core]
    assert_rows_equal(rows, list(core))


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_fps_in_load_dataset(root, streaming):
    from _clips import LENGTHS, RATES

    ds = _load(root, streaming=streaming, window_length=4, hop_size=3, fps=10)
    rows = list(ds)
    want = oracle_virtual_windows(LENGTHS, RATES, fps=10, window_length=4, hop_size=3)
    assert [list(row["frame_indices"]) for row in rows] == [w["frame_indices"] for w in want]
    assert [list(row["timestamps"]) for row in rows] == [w["timestamps"] for w in want]
    assert [row["start_frame"] for row in rows] == [w["frame_indices"][0] for w in want]
    core = VideoWindows(root, window_length=4, hop_size=3, fps=10)
    for row, sample in zip(rows, core, strict=True):
        np.testing.assert_array_equal(np.asarray(row["video"]), sample["video"])


def test_to_iterable_dataset_with_clips(root, core):
    ds = core.to_iterable_dataset(clips_per_video=2, clip_seed=3, num_shards=4)
    draws = []
    for epoch in (0, 1, 0):
        ds.set_epoch(epoch)
        whole = _ids(ds)
        _assert_clips(core, whole, 2)
        nodes = [
            datasets.distributed.split_dataset_by_node(ds, rank=r, world_size=2) for r in (0, 1)
        ]
        parts = []
        for node in nodes:
            node.set_epoch(epoch)
            parts += _ids(node)
        assert sorted(parts) == sorted(whole)
        draws.append(whole)
    assert draws[0] != draws[1] and draws[0] == draws[2]
    uniform = core.to_iterable_dataset(clips_per_video=3, clip_sampling="uniform", shuffle=True)
    assert sorted(_ids(uniform)) == oracle_uniform(core.plan.windows_per_video.tolist(), 3)
    # Resume mid-epoch.
    ds.set_epoch(1)
    it = iter(ds)
    head = [int(next(it)["sample_idx"]) for _ in range(5)]
    resumed = core.to_iterable_dataset(clips_per_video=2, clip_seed=3, num_shards=4)
    resumed.set_epoch(1)
    resumed.load_state_dict(ds.state_dict())
    assert head + _ids(resumed) == draws[1]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clips_per_video": 0}, r"clips_per_video must be an integer >= 1, got 0"),
        ({"clips_per_video": 2, "clip_sampling": "even"}, r"clip_sampling must be 'random' or"),
        ({"clips_per_video": 2, "clip_seed": -1}, r"clip_seed must be an integer >= 0, got -1"),
        ({"clip_sampling": "uniform"}, r"clip_sampling='uniform' .* apply only with clips_per_vid"),
        ({"short_videos": "loop"}, r"short_videos must be 'drop' or 'pad', got 'loop'"),
        ({"fps": 0}, r"fps must be a finite number > 0 .* got 0"),
    ],
)
def test_bad_options(core, kwargs, match):
    with pytest.raises(ValueError, match=match):
        HfLvfConfig(name="x", window_length=2, **kwargs)
    clip_kwargs = {k: v for k, v in kwargs.items() if k.startswith("clip")}
    if clip_kwargs:
        with pytest.raises(ValueError, match=match):
            core.to_iterable_dataset(**clip_kwargs)
    else:
        with pytest.raises(ValueError, match=match):
            VideoWindows(core.uri, window_length=2, **kwargs)


def test_options_are_part_of_the_cache_key(root):
    def cache_dir(**kwargs):
        builder = datasets.load_dataset_builder("hf_lvf", data_dir=str(root), **PARAMS, **kwargs)
        return builder.cache_dir

    plain = cache_dir()
    others = [
        cache_dir(clips_per_video=2, clip_sampling="uniform"),
        cache_dir(clips_per_video=3, clip_sampling="uniform"),
        cache_dir(clips_per_video=2, clip_sampling="uniform", clip_seed=1),
        cache_dir(short_videos="pad"),
        cache_dir(fps=10),
    ]
    assert len({plain, *others}) == 6


def test_without_the_new_options_nothing_changes(root, core):
    ds = _load(root, streaming=True)
    assert "frame_is_pad" not in ds.features and "timestamps" not in ds.features
    assert_rows_equal(ds, list(core))
    assert core.plan.timeline is None


def test_card_states_fps(root):
    text = str(build_card(root, window_length=4, fps=10))
    assert "    fps=10,\n" in text
    assert "| `fps` | 10 |" in text
    assert "| `timestamps` | `List(float64, length=4)` | seconds of each frame at 10 fps |" in text
    assert "fps=" not in str(build_card(root, window_length=4)).split("## Samples")[0]
