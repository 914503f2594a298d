"""VideoWindows against the FORMAT.md oracle, on roots of hf_lvf and of another tool."""

from __future__ import annotations

import io
import pickle
import random
import weakref
from concurrent.futures import ThreadPoolExecutor

import datasets
import lance
import numpy as np
import pytest
from _roots import (
    FRAME_SIZE,
    SAMPLE_KEYS,
    assert_same_sample,
    assert_same_samples,
    assert_same_values,
    foreign_videos,
    hf_root,
    make_frames,
    oracle_sample,
    oracle_windows,
    read_meta,
    write_foreign_root,
)
from PIL import Image

import hf_lvf.read.windows as windows_module
from hf_lvf import VideoWindows, WindowParams
from hf_lvf.write import write_frames


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("windows")
    return {
        "hf_lvf": hf_root(base / "hf"),
        "foreign": write_foreign_root(base / "foreign", foreign_videos()),
        "foreign_plain": write_foreign_root(
            base / "plain", foreign_videos((7, 1, 9), with_metadata=False), max_rows_per_file=4
        ),
    }


def random_params(rng: random.Random) -> dict:
    return dict(
        window_length=rng.randrange(1, 6),
        frame_skip=rng.choice([0, 0, 1, 2, 3]),
        hop_size=rng.randrange(1, 6),
        min_video_frames=rng.choice([None, None, 0, rng.randrange(0, 21)]),
    )


@pytest.mark.parametrize("name", ["hf_lvf", "foreign", "foreign_plain"])
def test_samples_equal_oracle(roots, name):
    root = roots[name]
    meta = read_meta(root)
    rng = random.Random(name)
    for _ in range(12 if name == "foreign_plain" else 15):
        params = random_params(rng)
        windows = oracle_windows(meta, **params)
        if not windows:
            with pytest.raises(ValueError, match="yields no windows"):
                VideoWindows(root, **params)
            continue
        w = VideoWindows(root, **params)
        n = len(windows)
        assert len(w) == n, params
        indices = [0, n - 1, -1, -n] + [rng.randrange(-n, n) for _ in range(4)]
        want = [oracle_sample(root, meta, windows, i) for i in indices]
        for i, sample in zip(indices, want, strict=True):
            assert_same_sample(w[i], sample)
        assert_same_samples(w.take(indices), want)
        assert_same_samples(w.take(np.array(indices, dtype=np.int32)), want)
        assert w.segment_info(0)["frame_indices"].dtype == np.int32
        for i in range(n):
            assert_same_values(
                w.segment_info(i),
                {
                    "video_idx": windows[i][0],
                    "filename": meta["videos"][windows[i][0]]["path"],
                    "start_frame": windows[i][1],
                    "frame_indices": windows[i][2],
                },
            )


def test_sample_keys_and_types(roots):
    w = VideoWindows(roots["foreign"], window_length=3, frame_skip=1)
    sample = w[-1]
    assert list(sample) == [*SAMPLE_KEYS, "action", "score", "label"]
    assert sample["video"].shape == (3, *FRAME_SIZE, 3)
    assert (sample["video_idx"], sample["start_frame"]) == (4, 8)
    assert sample["frame_indices"].dtype == np.int32
    assert sample["frame_indices"].tolist() == [8, 10, 12]
    assert (sample["filename"], sample["sample_idx"]) == ("/footage/cam4/take_04.mkv", len(w) - 1)
    assert (sample["action"], sample["score"], sample["label"]) == ("act0", 1.0, 4)


def test_take_matches_getitem_with_duplicates_and_order(roots):
    w = VideoWindows(roots["hf_lvf"], window_length=4, frame_skip=1, hop_size=2)
    indices = [5, 0, 5, -1, 3, 3, 0, 7]
    batch = w.take(indices)
    assert [s["sample_idx"] for s in batch] == [5, 0, 5, len(w) - 1, 3, 3, 0, 7]
    assert_same_samples(batch, [w[i] for i in indices])
    assert w.take([]) == []
    assert_same_samples(w[2:5], w.take([2, 3, 4]))
    assert w.__getitems__ == w.take


def test_iter_samples_reuses_frames_correctly(roots):
    # hop < span: consecutive windows share frames, which the reader decodes once.
    w = VideoWindows(roots["foreign"], window_length=4, hop_size=1, frame_skip=1)
    every = w.take(range(len(w)))
    assert_same_samples(list(w.iter_samples(batch_size=3)), every)
    assert_same_samples(list(w), every)
    order = list(range(len(w)))[::-1]
    assert_same_samples(list(w.iter_samples(order, batch_size=5)), [every[i] for i in order])
    shuffled = random.Random(0).sample(range(len(w)), len(w))
    assert_same_samples(list(w.iter_samples(shuffled, batch_size=2)), [every[i] for i in shuffled])
    # Interleaving single reads with the sequential pass does not disturb it.
    assert_same_sample(w[3], every[3])
    assert_same_sample(w[4], every[4])
    assert_same_sample(w[0], every[0])


def _counting_reads(root, monkeypatch, **params) -> tuple[VideoWindows, list[int]]:
    """A fresh view, and the list of how many rows each of its Lance reads asks for."""
    w = VideoWindows(root, **params)
    reads: list[int] = []
    reader = w._frames.reader
    original = reader.read
    monkeypatch.setattr(reader, "read", lambda rows: reads.append(len(rows)) or original(rows))
    return w, reads


def test_iter_samples_reads_many_windows_at_once(roots, monkeypatch):
    params = dict(window_length=4, hop_size=1, decode_threads=2)
    every = VideoWindows(roots["hf_lvf"], **params).take(range(32))
    total = sum(v.num_frames for v in VideoWindows(roots["hf_lvf"]).videos)
    total -= 3  # the 3-frame video yields no window
    # The first window alone (handed out first), then one read decodes the frames of all the
    # windows that fit, whatever batch_size says; no frame is read twice.
    w, reads = _counting_reads(roots["hf_lvf"], monkeypatch, **params)
    assert len(w) == 32
    assert_same_samples(list(w.iter_samples(batch_size=1)), every)
    assert reads == [4, total - 4]
    # A small strip: several reads, each frame still decoded once over the whole pass.
    frame_bytes = 3 * FRAME_SIZE[0] * FRAME_SIZE[1]
    monkeypatch.setattr(windows_module, "_STRIP_BYTES", 7 * frame_bytes)
    w, reads = _counting_reads(roots["hf_lvf"], monkeypatch, **params)
    assert_same_samples(list(w.iter_samples(batch_size=2)), every)
    assert len(reads) > 3 and sum(reads) == total


@pytest.mark.parametrize("strip_frames", [1, 5, 40])
def test_iter_samples_shared_reads_equal_take(roots, monkeypatch, strip_frames):
    monkeypatch.setattr(
        windows_module, "_STRIP_BYTES", strip_frames * 3 * FRAME_SIZE[0] * FRAME_SIZE[1]
    )
    rng = random.Random(strip_frames)
    for _ in range(6):
        params = random_params(rng)
        try:
            w = VideoWindows(roots["foreign"], **params)
        except ValueError:
            continue
        every = w.take(range(len(w)))
        orders = [
            list(range(len(w))),
            list(range(len(w)))[::-1],
            rng.sample(range(len(w)), len(w)),
            [0, 0, 1, 1, 0, len(w) - 1],  # repeats, and windows whose frames interleave
        ]
        for order in orders:
            got = list(w.iter_samples(order, batch_size=rng.randrange(1, 5)))
            assert_same_samples(got, [every[i] for i in order])


def test_iter_samples_windows_are_read_only_views(roots):
    w = VideoWindows(roots["hf_lvf"], window_length=4, hop_size=2, frame_skip=1)
    # Consecutive windows share frames: one strip of decoded frames, each window a view (the
    # first window of a pass is a strip of its own).
    _, first, second = list(w.iter_samples(range(3)))
    assert np.shares_memory(first["video"], second["video"])
    np.testing.assert_array_equal(first["video"][1:], second["video"][:-1])
    before = second["video"].copy()
    with pytest.raises(ValueError, match="read-only"):
        first["video"][1] = 0
    with pytest.raises(ValueError, match="read-only|not writeable|cannot set WRITEABLE"):
        first["video"].flags.writeable = True
    np.testing.assert_array_equal(second["video"], before)
    private = np.array(first["video"])
    private[1] = 0  # a copy is the caller's own
    np.testing.assert_array_equal(second["video"], before)
    # take() gives writable arrays that share nothing with each other.
    a, b = w.take([1, 2])
    assert a["video"].flags.writeable and not np.shares_memory(a["video"], b["video"])
    a["video"][1] = 0
    np.testing.assert_array_equal(b["video"], before)


def test_strips_are_recycled_only_when_nothing_refers_to_them(roots, monkeypatch):
    frame_bytes = 3 * FRAME_SIZE[0] * FRAME_SIZE[1]
    monkeypatch.setattr(windows_module, "_STRIP_BYTES", 6 * frame_bytes)
    params = dict(window_length=3, hop_size=1)
    w = VideoWindows(roots["hf_lvf"], **params)
    every = VideoWindows(roots["hf_lvf"], **params).take(range(len(w)))
    # Samples let go as the pass goes: their strips' memory comes back.
    owners = set()
    for sample, want in zip(w.iter_samples(batch_size=1), every, strict=True):
        assert_same_sample(sample, want)
        owners.add(sample["video"].base.__array_interface__["data"][0])
    assert len(owners) <= 3
    # Samples (or tensors made from them) kept: never overwritten.
    kept = list(w.iter_samples(batch_size=1))
    views = [np.asarray(memoryview(s["video"])) for s in kept[::2]]
    del kept[::2]
    assert_same_samples(kept, every[1::2])
    for view, want in zip(views, every[::2], strict=True):
        np.testing.assert_array_equal(view, want["video"])
    # Batches of take(): the same, and their arrays stay writable.
    addresses = set()
    for lo in range(0, 12, 2):
        batch = w.take([lo, lo + 1])
        addresses.add(batch[0]["video"].__array_interface__["data"][0])
        batch[1]["video"][...] = 0
    assert len(addresses) <= 3
    kept = [w.take([lo, lo + 1]) for lo in range(0, 12, 2)]
    for lo, batch in zip(range(0, 12, 2), kept, strict=True):
        assert_same_samples(batch, every[lo : lo + 2])


def test_a_new_pass_reuses_the_strips_of_the_last(roots, monkeypatch):
    # 44 frames in strips of up to 13: strips hold different numbers of frames. Every strip's
    # memory is the same size, and a new pass lets go of the last one's cache: after a short
    # pass and a whole one, the next whole pass needs no memory of its own. Three strips at
    # most: one decoding, one handed out, and the one before (the loop still holds its last
    # window when the next strip starts).
    monkeypatch.setattr(windows_module, "_STRIP_BYTES", 13 * 3 * FRAME_SIZE[0] * FRAME_SIZE[1])
    w = VideoWindows(roots["hf_lvf"], window_length=3, hop_size=1)
    memory: list[weakref.ref] = []
    counts = []
    for indices in ([len(w) - 1], None, None):
        for sample in w.iter_samples(indices):
            if not any(ref() is sample["video"].base for ref in memory):
                memory.append(weakref.ref(sample["video"].base))
        counts.append(len(memory))
    assert counts == [1, 3, 3]


def test_iter_samples_bad_batch_size(roots):
    w = VideoWindows(roots["foreign"])
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match=f"batch_size must be an integer >= 1, got {bad!r}"):
            next(w.iter_samples(batch_size=bad))


def test_read_video(roots):
    w = VideoWindows(roots["hf_lvf"], window_length=3, hop_size=4)
    video = w.read_video([1, -1, 1])
    assert video.shape == (3, 3, *FRAME_SIZE, 3) and video.dtype == np.uint8
    np.testing.assert_array_equal(video, np.stack([s["video"] for s in w.take([1, -1, 1])]))
    assert w.read_video([]).shape == (0, 3, *FRAME_SIZE, 3)


def test_decode_threads_do_not_change_results(roots):
    one = VideoWindows(roots["foreign"], window_length=5, decode_threads=1)
    two = VideoWindows(roots["foreign"], window_length=5, decode_threads=2)
    indices = list(range(0, len(one), 3))
    assert_same_samples(two.take(indices), one.take(indices))


def test_description(roots):
    w = VideoWindows(roots["foreign"], window_length=2, hop_size=3, min_video_frames=7)
    assert w.params == WindowParams(window_length=2, hop_size=3, min_video_frames=7)
    assert w.plan.windows_per_video.tolist() == [3, 0, 6, 0, 4]
    assert len(w) == 13
    assert w.frame_size == FRAME_SIZE
    assert w.uri == str(roots["foreign"])
    assert [v.path for v in w.videos] == [f"/footage/cam{i}/take_{i:02d}.mkv" for i in range(5)]
    assert w.metadata_fields == {"action": "string", "score": "float64", "label": "int64"}
    assert repr(w) == (
        f"VideoWindows({str(roots['foreign'])!r}, windows=13, videos=5, window_length=2, "
        "frame_skip=0, hop_size=3, min_video_frames=7, frame_size=(32, 48))"
    )


def test_features(tmp_path):
    kinds = {"label": 3, "score": 0.5, "split": "train", "flag": True, "note": None}
    mixed = {"label": 4, "score": 2, "split": "val", "flag": False, "note": None}
    videos = [
        ("a", make_frames(5, *FRAME_SIZE, seed=0), kinds),
        ("b", make_frames(4, *FRAME_SIZE, seed=1), mixed),
    ]
    w = VideoWindows(write_frames(tmp_path / "r", videos), window_length=3)
    features = w.features
    assert features == datasets.Features(
        {
            "video": datasets.Array4D((3, *FRAME_SIZE, 3), "uint8"),
            "video_idx": datasets.Value("int32"),
            "filename": datasets.Value("string"),
            "start_frame": datasets.Value("int32"),
            "frame_indices": datasets.List(datasets.Value("int32"), length=3),
            "sample_idx": datasets.Value("int64"),
            "label": datasets.Value("int64"),
            "score": datasets.Value("float64"),
            "split": datasets.Value("string"),
            "flag": datasets.Value("bool"),
            "note": datasets.Value("string"),
        }
    )
    assert list(features) == list(w[0])
    sample = w[-1]
    assert (sample["label"], sample["score"], sample["flag"], sample["note"]) == (4, 2, False, "")
    # Values are typed as their feature says, so a batch collates to one dtype whatever its order.
    assert type(sample["score"]) is float and type(w[0]["score"]) is float
    encoded = features.encode_example(sample)
    assert np.asarray(encoded["video"]).shape == (3, *FRAME_SIZE, 3)


def test_metadata_fields_mixing_types(tmp_path):
    videos = [
        ("a", make_frames(2, 8, 8, seed=0), {"label": 1}),
        ("b", make_frames(2, 8, 8, seed=1), {"label": "one"}),
    ]
    with pytest.raises(
        ValueError, match="metadata field 'label' mixes value types across videos: int, str"
    ):
        VideoWindows(write_frames(tmp_path / "r", videos))


@pytest.fixture(scope="module")
def mixed_root(tmp_path_factory):
    videos = foreign_videos((6, 5), frame_size=(32, 48)) + foreign_videos((7,), frame_size=(20, 30))
    videos += foreign_videos((2,), frame_size=(16, 16))  # too short for 3-frame windows
    return write_foreign_root(tmp_path_factory.mktemp("mixed") / "r", videos)


def test_mixed_sizes_need_frame_size(mixed_root):
    with pytest.raises(
        ValueError, match=r"differ in size \(20x30, 32x48, HxW\).*pass frame_size=\(H, W\)"
    ):
        VideoWindows(mixed_root, window_length=3)
    # Only videos that yield windows count: the 16x16 one is too short.
    with pytest.raises(ValueError, match=r"differ in size \(20x30, 32x48, HxW\)"):
        VideoWindows(mixed_root, min_video_frames=3)
    # Windows from the 20x30 video only: no resize needed.
    assert VideoWindows(mixed_root, min_video_frames=7).frame_size == (20, 30)
    with pytest.raises(ValueError, match=r"differ in size \(16x16, 20x30, 32x48, HxW\)"):
        VideoWindows(mixed_root)


def test_frame_size_resizes_with_bilinear(mixed_root):
    meta = read_meta(mixed_root)
    params = dict(window_length=3, frame_skip=0, hop_size=2, min_video_frames=None)
    windows = oracle_windows(meta, **params)
    w = VideoWindows(mixed_root, **params, frame_size=(24, 40))
    assert w.frame_size == (24, 40)
    assert w.features["video"].shape == (3, 24, 40, 3)
    assert len(w) == len(windows) == 2 + 2 + 3
    for i in range(len(w)):
        assert_same_sample(w[i], oracle_sample(mixed_root, meta, windows, i, frame_size=(24, 40)))
    # frame_size equal to a video's own size leaves its frames untouched.
    same = VideoWindows(mixed_root, **params, frame_size=(32, 48))
    assert_same_sample(same[0], oracle_sample(mixed_root, meta, windows, 0))


def test_resize_is_pillow_bilinear_of_the_stored_frame(tmp_path):
    frame = make_frames(1, 20, 30, seed=3)[0]
    root = write_foreign_root(tmp_path / "r", [{"frames": [frame], "path": "p"}])
    blob = lance.dataset(str(root)).take([0], columns=["bytes"]).column("bytes")[0].as_py()
    decoded = Image.open(io.BytesIO(blob)).convert("RGB")
    want = np.asarray(decoded.resize((11, 7), Image.Resampling.BILINEAR))
    got = VideoWindows(root, frame_size=[7, 11])[0]["video"][0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [(0, 4), (3,), (4, 4, 4), "ab", (2.0, 3), (True, 3), 5])
def test_bad_frame_size(roots, bad):
    with pytest.raises(
        ValueError, match=r"frame_size must be a pair of positive integers \(H, W\)"
    ):
        VideoWindows(roots["foreign"], frame_size=bad)


def test_pickle_keeps_every_parameter(roots):
    w = VideoWindows(
        roots["foreign"],
        window_length=2,
        frame_skip=1,
        hop_size=2,
        min_video_frames=7,
        frame_size=(16, 24),
        decode_threads=1,
    )
    before = w.take([0, -1])  # opened: the Lance handle must not travel
    clone = pickle.loads(pickle.dumps(w))
    assert (
        clone.params
        == w.params
        == WindowParams(window_length=2, frame_skip=1, hop_size=2, min_video_frames=7)
    )
    assert (len(clone), clone.frame_size, repr(clone)) == (len(w), (16, 24), repr(w))
    assert_same_samples(clone.take([0, -1]), before)
    assert_same_samples(clone.take(range(len(w))), w.take(range(len(w))))
    assert (
        VideoWindows.from_layout(w.layout, w.params, frame_size=(16, 24)).take([3])[0]["sample_idx"]
        == 3
    )


def test_out_of_range(roots):
    w = VideoWindows(roots["foreign"], window_length=5)
    n = len(w)
    for bad in (n, -n - 1, 10**12):
        with pytest.raises(IndexError, match=f"window index {bad} is out of range for {n} windows"):
            w[bad]
        with pytest.raises(IndexError, match=f"window index {bad} is out of range"):
            w.take([0, bad])
    with pytest.raises(IndexError):
        w.segment_info(n)
    with pytest.raises(IndexError):
        w.read_video([n])


@pytest.mark.parametrize("bad", [1.0, "0", None, True, [0]])
def test_non_integer_index(roots, bad):
    w = VideoWindows(roots["foreign"])
    with pytest.raises(TypeError, match="window index must be an integer or a slice, got"):
        w[bad]


@pytest.mark.parametrize("bad", [[1.5], [0, 2.0], ["1"], [None]])
def test_non_integer_indices_in_batch(roots, bad):
    w = VideoWindows(roots["foreign"])
    with pytest.raises(TypeError, match="window indices must be integers"):
        w.take(bad)
    with pytest.raises(TypeError, match="window indices must be integers"):
        w.read_video(bad)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window_length": 0}, "window_length must be >= 1, got 0"),
        ({"frame_skip": -1}, "frame_skip must be >= 0, got -1"),
        ({"hop_size": 0}, "hop_size must be >= 1, got 0"),
        ({"min_video_frames": -1}, "min_video_frames must be >= 0, got -1"),
        ({"window_length": "4"}, "window_length must be an integer >= 1, got '4'"),
        ({"hop_size": 1.0}, r"hop_size must be an integer >= 1, got 1\.0"),
        ({"min_video_frames": 2.5}, r"min_video_frames must be an integer >= 0, got 2\.5"),
        ({"decode_threads": 0}, "decode_threads must be an integer >= 1, got 0"),
    ],
)
def test_bad_parameters(roots, kwargs, match):
    with pytest.raises(ValueError, match=match):
        VideoWindows(roots["foreign"], **kwargs)


def test_bad_parameters_checked_before_the_root(tmp_path):
    with pytest.raises(ValueError, match="hop_size must be >= 1, got 0"):
        VideoWindows(tmp_path / "missing", hop_size=0)


def test_no_window_at_all(roots):
    with pytest.raises(
        ValueError,
        match=r"yields no windows: every video has fewer than "
        r"max\(span=21, min_video_frames=None\) frames \(longest: 17\)",
    ):
        VideoWindows(roots["foreign"], window_length=11, frame_skip=1)
    with pytest.raises(ValueError, match=r"max\(span=1, min_video_frames=18\)"):
        VideoWindows(roots["foreign"], min_video_frames=18)


def test_reads_from_many_threads_at_once(roots, monkeypatch):
    # datasets reads the shards of a shuffled stream, and decodes examples, on threads of
    # its own, all through one view per process: passes, batches and row-by-row reads of
    # one view at once must each get their own windows.
    monkeypatch.setattr(windows_module, "_STRIP_BYTES", 5 * 3 * FRAME_SIZE[0] * FRAME_SIZE[1])
    params = dict(window_length=3, hop_size=1)
    w = VideoWindows(roots["hf_lvf"], **params)
    want = VideoWindows(roots["hf_lvf"], **params).read_video(np.arange(len(w)))
    rng = np.random.default_rng(0)
    orders = [rng.permutation(len(w)) if k % 2 else np.arange(len(w)) for k in range(12)]

    def read(k: int) -> np.ndarray:
        order = orders[k]
        if k % 3 == 0:
            return np.stack([s["video"] for s in w.iter_samples(order, batch_size=1)])
        if k % 3 == 1:
            return np.stack([w.take(order[lo : lo + 3])[0]["video"] for lo in range(len(order))])
        return np.stack([w.read_ahead(int(i)) for i in order])  # map-style rows, one by one

    for _ in range(3):
        with ThreadPoolExecutor(6) as pool:
            for k, got in enumerate(pool.map(read, range(len(orders)))):
                np.testing.assert_array_equal(got, want[orders[k]], err_msg=f"reader {k}")
