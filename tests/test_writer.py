"""write_frames: the exact FORMAT.md layout, streaming, atomic publication, input checks."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from _roots import FRAME_SIZE, assert_same_samples, hf_root, make_frames, read_meta
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.write import write_frames

TOP_LEVEL_FIELDS = [
    "cache_format_version",
    "format",
    "layout",
    "schema_fingerprint",
    "num_rows",
    "total_rows",
    "n_videos",
    "n_skipped",
    "encoding",
    "quality",
    "lossless",
    "resize",
    "video_column",
    "videos",
    "lineage",
    "lance_version",  # an extra field (FORMAT.md keeps them): the version this file describes
]
VIDEO_FIELDS = ["id", "key", "path", "checksum", "T", "H", "W", "start_row", "metadata"]


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.parent.glob(f".{root.name}.*"))


def frames_then_fail(num_frames: int, fail_at: int):
    for i, frame in enumerate(make_frames(num_frames, *FRAME_SIZE, seed=0)):
        if i == fail_at:
            raise RuntimeError(f"source broke at frame {i}")
        yield frame


# --- what is written --------------------------------------------------------------


def test_writes_exactly_the_layout(tmp_path):
    lengths = [40, 3, 70]  # > one internal batch of frames, several batches per video
    frames = [make_frames(n, *FRAME_SIZE, seed=i) for i, n in enumerate(lengths)]
    videos = [
        (
            f"v{i}",
            iter(f),
            {"label": i, "score": np.float32(0.5), "name": f"n{i}", "ok": np.bool_(i)},
        )
        for i, f in enumerate(frames)
    ]
    root = write_frames(tmp_path / "root", videos, quality=90, lineage={"source": "test"})
    assert root == (tmp_path / "root").absolute()
    assert sorted(p.name for p in root.iterdir()) == [
        "_metadata.json",
        "_transactions",
        "_versions",
        "data",
    ]
    assert leftovers(root) == []

    ds = lance.dataset(str(root))
    assert ds.schema.names == ["video_id", "frame_idx", "bytes"]
    assert [f.type for f in ds.schema] == [pa.int32(), pa.int32(), pa.large_binary()]
    table = ds.to_table()
    assert table.column("video_id").to_pylist() == [
        v for v, n in enumerate(lengths) for _ in range(n)
    ]
    assert table.column("frame_idx").to_pylist() == [f for n in lengths for f in range(n)]

    meta = json.loads((root / "_metadata.json").read_text())
    assert list(meta) == TOP_LEVEL_FIELDS
    assert meta["layout"] == "lance-video-frames"
    assert (meta["format"], meta["encoding"], meta["video_column"]) == ("lance", "webp", "video")
    assert (meta["cache_format_version"], meta["quality"], meta["resize"], meta["n_skipped"]) == (
        1,
        90,
        None,
        0,
    )
    assert meta["num_rows"] == meta["total_rows"] == ds.count_rows() == 113
    assert meta["n_videos"] == 3
    assert meta["lossless"] is False
    assert meta["lance_version"] == ds.version == 1
    assert isinstance(meta["schema_fingerprint"], str) and meta["schema_fingerprint"]
    assert meta["lineage"]["source"] == "test" and meta["lineage"]["writer"].startswith("hf_lvf ")
    starts = [0, 40, 43]
    for i, entry in enumerate(meta["videos"]):
        assert list(entry) == VIDEO_FIELDS
        assert entry == {
            "id": i,
            "key": f"v{i}",
            "path": f"v{i}",
            "checksum": None,
            "T": lengths[i],
            "H": 32,
            "W": 48,
            "start_row": starts[i],
            "metadata": {"label": i, "score": 0.5, "name": f"n{i}", "ok": bool(i)},
        }
    # numpy scalars were stored as JSON scalars, and read back as Python values.
    assert type(meta["videos"][1]["metadata"]["ok"]) is bool

    # Every row is lossy WebP of its frame.
    for row in (0, 39, 40, 112):
        video = int(np.searchsorted(starts, row, side="right") - 1)
        blob = table.column("bytes")[row].as_py()
        image = Image.open(io.BytesIO(blob))
        assert (image.format, image.mode, image.size) == ("WEBP", "RGB", (48, 32))
        original = frames[video][row - starts[video]].astype(int)
        assert np.abs(np.asarray(image).astype(int) - original).mean() < 10  # 4:2:0 chroma


def test_videos_of_different_sizes(tmp_path):
    videos = [
        ("a", make_frames(3, 16, 24, seed=0), None),
        ("b", make_frames(2, 24, 16, seed=1), {}),
    ]
    meta = read_meta(write_frames(tmp_path / "r", videos))
    assert [(v["H"], v["W"], v["metadata"]) for v in meta["videos"]] == [(16, 24, {}), (24, 16, {})]


def test_frames_as_lists_and_generators(tmp_path):
    frames = make_frames(4, *FRAME_SIZE, seed=2)
    a = write_frames(tmp_path / "a", [("v", frames, None)])
    b = write_frames(tmp_path / "b", iter([("v", (f for f in frames), None)]))
    assert_same_samples(VideoWindows(a).take(range(4)), VideoWindows(b).take(range(4)))


# --- streaming ----------------------------------------------------------------------


_PEAKS = textwrap.dedent(
    """
    import json, sys, tracemalloc
    from pathlib import Path
    import numpy as np
    from hf_lvf.write import write_frames

    def peak_while_writing(path, num_frames):
        def frames():
            rng = np.random.default_rng(num_frames)
            for _ in range(num_frames):
                yield rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)

        tracemalloc.start()
        try:
            write_frames(path, [("long", frames(), {"label": 0})], quality=30)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    folder = Path(sys.argv[1])
    peak_while_writing(folder / "warmup", 8)  # first-use imports and caches
    peaks = [peak_while_writing(folder / name, n) for name, n in (("short", 60), ("long", 600))]
    print(json.dumps(peaks))
    """
)


def test_memory_does_not_grow_with_video_length(tmp_path):
    """The peak of Python allocations while writing a video of 600 frames against one of 60,
    in a process of its own: tracemalloc counts every thread's allocations, and in the suite's
    process another test's threads (a read-ahead, a server) may allocate meanwhile."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAKS, str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    short, long = json.loads(done.stdout.strip().splitlines()[-1])
    # Holding the frames would cost 600 * 12 KiB = 7 MiB on top of the short run's peak.
    assert long < 2 * short, (short, long)
    assert lance.dataset(str(tmp_path / "long")).count_rows() == 600


# --- atomic publication -----------------------------------------------------------------


def test_error_mid_way_leaves_nothing(tmp_path):
    root = tmp_path / "root"
    videos = [
        ("a", make_frames(5, *FRAME_SIZE, seed=0), None),
        ("b", frames_then_fail(80, 50), None),
    ]
    with pytest.raises(RuntimeError, match="source broke at frame 50"):
        write_frames(root, videos)
    assert not root.exists()
    assert leftovers(root) == []


def test_overwrite_error_keeps_previous_root(tmp_path):
    root = hf_root(tmp_path / "root", (6, 4))
    before = VideoWindows(root, window_length=2).take(range(8))
    with pytest.raises(RuntimeError, match="source broke at frame 40"):
        write_frames(root, [("x", frames_then_fail(60, 40), None)], overwrite=True)
    assert leftovers(root) == []
    assert_same_samples(VideoWindows(root, window_length=2).take(range(8)), before)


def test_overwrite_replaces(tmp_path):
    root = hf_root(tmp_path / "root", (6, 4))
    write_frames(root, [("new", make_frames(3, 8, 8, seed=5), None)], overwrite=True)
    assert leftovers(root) == []
    w = VideoWindows(root)
    assert (len(w), w.frame_size, w.videos[0].key) == (3, (8, 8), "new")


def test_existing_root_refused_before_any_work(tmp_path):
    root = hf_root(tmp_path / "root", (3,))
    consumed = []

    def videos():
        consumed.append(True)
        yield ("v", make_frames(2, 8, 8, seed=0), None)

    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True to replace it"):
        write_frames(root, videos())
    assert consumed == []
    assert leftovers(root) == []
    assert len(VideoWindows(root)) == 3


_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from hf_lvf.write import write_frames

    def frames():
        for i in range(100_000):
            time.sleep(0.005)
            yield np.full((16, 16, 3), i % 256, np.uint8)

    write_frames(sys.argv[1], [("endless", frames(), None)])
    """
)


def test_killed_writer_leaves_no_root_and_is_cleaned_up(tmp_path):
    root = tmp_path / "root"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(root)])
    try:
        deadline = time.monotonic() + 60
        while not leftovers(root):
            assert proc.poll() is None, "the writer exited before it started writing"
            assert time.monotonic() < deadline, "the writer never created its scratch folder"
            time.sleep(0.05)
        time.sleep(0.5)  # let it write some frames
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not root.exists()
    stale = leftovers(root)
    assert len(stale) == 1 and stale[0].startswith(".root.tmp-")

    write_frames(root, [("v", make_frames(3, 8, 8, seed=0), None)])
    assert leftovers(root) == []
    assert len(VideoWindows(root)) == 3


# --- bad input -------------------------------------------------------------------------


def _frames_with(bad, at: int, num_frames: int = 6):
    frames = make_frames(num_frames, *FRAME_SIZE, seed=0)
    frames[at] = bad
    return frames


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (
            np.zeros((32, 48, 3), np.float32),
            r"frame 3 of video 'clip' must be a \(H, W, 3\) uint8 RGB array, "
            r"got shape \(32, 48, 3\) dtype float32",
        ),
        (
            np.zeros((32, 48), np.uint8),
            r"frame 3 of video 'clip' must be a \(H, W, 3\) uint8 RGB array, got shape \(32, 48\)",
        ),
        (
            np.zeros((32, 48, 4), np.uint8),
            r"frame 3 of video 'clip' must be .* got shape \(32, 48, 4\)",
        ),
        (
            np.zeros((32, 40, 3), np.uint8),
            r"frame 3 of video 'clip' is 32x40 \(HxW\) but frame 0 is 32x48",
        ),
        ("not a frame", r"frame 3 of video 'clip' must be a \(H, W, 3\) uint8 RGB array"),
    ],
)
def test_bad_frame(tmp_path, bad, match):
    root = tmp_path / "root"
    videos = [
        ("ok", make_frames(2, *FRAME_SIZE, seed=1), None),
        ("clip", _frames_with(bad, 3), None),
    ]
    with pytest.raises(ValueError, match=match):
        write_frames(root, videos)
    assert not root.exists() and leftovers(root) == []


@pytest.mark.parametrize(
    ("metadata", "error", "match"),
    [
        (
            {"tags": [1, 2]},
            TypeError,
            r"metadata field 'tags' of video 'v' must be a str, int, float, bool or None, "
            r"got \[1, 2\]",
        ),
        ({"arr": np.zeros(2)}, TypeError, "metadata field 'arr' of video 'v' must be a str, int"),
        (
            {"video_idx": 1},
            ValueError,
            "metadata field 'video_idx' of video 'v' would shadow the sample key",
        ),
        (
            {"frame_indices": 1},
            ValueError,
            "metadata field 'frame_indices' of video 'v' would shadow",
        ),
        ({3: "x"}, TypeError, "metadata field names of video 'v' must be str, got 3"),
        (
            [("label", 1)],
            TypeError,
            r"metadata of video 'v' must be a mapping, got \[\('label', 1\)\]",
        ),
    ],
)
def test_bad_metadata(tmp_path, metadata, error, match):
    root = tmp_path / "root"
    with pytest.raises(error, match=match):
        write_frames(root, [("v", make_frames(2, 8, 8, seed=0), metadata)])
    assert not root.exists() and leftovers(root) == []


@pytest.mark.parametrize(
    ("videos", "error", "match"),
    [
        ([], ValueError, "videos is empty: a root needs at least one video"),
        (
            [("a", make_frames(2, 8, 8, seed=0), None), ("a", make_frames(2, 8, 8, seed=1), None)],
            ValueError,
            "video key 'a' appears twice",
        ),
        ([("a", [], None)], ValueError, "video 'a' has no frames"),
        (
            [("a", make_frames(2, 8, 8, seed=0))],
            TypeError,
            r"videos\[0\] must be a \(key, frames, metadata\) tuple",
        ),
        (
            [("", make_frames(2, 8, 8, seed=0), None)],
            TypeError,
            r"videos\[0\] key must be a non-empty str, got ''",
        ),
        ([("a", None, None)], TypeError, "frames of video 'a' must be an iterable of arrays"),
        (
            [(7, make_frames(2, 8, 8, seed=0), None)],
            TypeError,
            r"videos\[0\] key must be a non-empty str, got 7",
        ),
    ],
)
def test_bad_videos(tmp_path, videos, error, match):
    root = tmp_path / "root"
    with pytest.raises(error, match=match):
        write_frames(root, videos)
    assert not root.exists() and leftovers(root) == []


@pytest.mark.parametrize("quality", [-1, 101, 50.0, True, "65"])
def test_bad_quality(tmp_path, quality):
    with pytest.raises(
        ValueError, match=f"quality must be an integer in \\[0, 100\\], got {quality!r}"
    ):
        write_frames(
            tmp_path / "root", [("v", make_frames(1, 8, 8, seed=0), None)], quality=quality
        )
    assert not (tmp_path / "root").exists()
