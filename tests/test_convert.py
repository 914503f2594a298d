"""convert_videos: real video files (written with PyAV) -> a root that both readers agree on."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import lance
import numpy as np
import pytest
from _roots import assert_same_samples, oracle_sample, oracle_windows, read_meta
from _signals import sigint_default
from _videos import (
    decode_rgb,
    decode_scaled,
    make_labelled_folder,
    psnr,
    truncate,
    webp_roundtrip,
    write_audio_only,
    write_video,
)

import hf_lvf
from hf_lvf import VideoWindows
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos
from hf_lvf.errors import SkippedVideoWarning, VideoDecodeError

# Quality 65 (the default is 90 now, higher) against the PyAV-decoded source frames, measured on
# these synthetic clips
# (sharp-edged gradients with a moving square, >= 200 px): every frame >= 29 dB, mean >= 30
# dB. (4:4:4 H.264 sources are the lowest: WebP stores chroma at half resolution.)
PSNR_FLOOR_DB = 29.0
PSNR_MEAN_FLOOR_DB = 30.0
REPO = Path(__file__).resolve().parents[1]


def stored_frames(root: Path, video_idx: int) -> np.ndarray:
    """Every stored frame of one video, through hf_lvf."""
    windows = VideoWindows(root)
    rows = windows.plan.video_windows(video_idx)
    return windows.read_video(np.asarray(rows))[:, 0]


def lance_columns(root: Path) -> tuple[np.ndarray, np.ndarray]:
    table = lance.dataset(str(root)).to_table(columns=["video_id", "frame_idx"])
    return table.column("video_id").to_numpy(), table.column("frame_idx").to_numpy()


def leftovers(parent: Path, name: str) -> list[str]:
    """Scratch folders a writer of ``parent/name`` would leave beside it."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


# --- a labelled folder ---


def test_labelled_folder_with_metadata_file(tmp_path: Path) -> None:
    folder = make_labelled_folder(tmp_path / "clips", classes=("walk", "run"), per_class=2)
    summary = convert_videos(folder, tmp_path / "root", workers=0, progress=False, splits="none")

    assert (summary.num_videos, summary.num_frames, summary.n_skipped) == (4, 42, 0)
    meta = read_meta(tmp_path / "root")
    assert meta["label_names"] == ["run", "walk"]
    assert (meta["n_videos"], meta["num_rows"], meta["n_skipped"]) == (4, 42, 0)
    assert (meta["quality"], meta["resize"], meta["layout"]) == (90, None, "lance-video-frames")
    videos = meta["videos"]
    assert [v["path"] for v in videos] == [
        "run/clip_0.mp4",
        "run/clip_1.mp4",
        "walk/clip_0.mp4",
        "walk/clip_1.mp4",
    ]
    assert [v["key"] for v in videos] == ["run/clip_0", "run/clip_1", "walk/clip_0", "walk/clip_1"]
    assert [v["id"] for v in videos] == [0, 1, 2, 3]
    assert [(v["T"], v["H"], v["W"]) for v in videos] == [(10, 32, 48), (11, 32, 48)] * 2
    assert [v["start_row"] for v in videos] == [0, 10, 21, 31]
    # make_labelled_folder wrote walk/* first (seeds 0, 1), then run/* (seeds 2, 3).
    assert [v["metadata"] for v in videos] == [
        {"label": 0, "split": "val", "score": 2.5, "fps": 30.0},
        {"label": 0, "split": "train", "score": 3.5, "fps": 30.0},
        {"label": 1, "split": "val", "score": 0.5, "fps": 30.0},
        {"label": 1, "split": "train", "score": 1.5, "fps": 30.0},
    ]
    assert {(v["codec"], v["source_fps"]) for v in videos} == {("h264", 30.0)}
    for v in videos:
        digest = hashlib.sha256((folder / v["path"]).read_bytes()).hexdigest()
        assert v["checksum"] == digest

    video_id, frame_idx = lance_columns(tmp_path / "root")
    np.testing.assert_array_equal(video_id, np.repeat([0, 1, 2, 3], [10, 11, 10, 11]))
    np.testing.assert_array_equal(frame_idx, np.concatenate([np.arange(t) for t in (10, 11) * 2]))


@pytest.mark.parametrize("params", [(1, 0, 1), (4, 1, 3), (3, 2, 5)])
def test_converted_root_reads_like_the_reference(tmp_path: Path, params) -> None:
    window_length, frame_skip, hop_size = params
    folder = make_labelled_folder(tmp_path / "clips", per_class=2, num_frames=9)
    root = convert_videos(folder, tmp_path / "root", workers=0, progress=False, splits="none").root
    meta = read_meta(root)
    windows = VideoWindows(
        root, window_length=window_length, frame_skip=frame_skip, hop_size=hop_size
    )
    plan = oracle_windows(
        meta,
        window_length=window_length,
        frame_skip=frame_skip,
        hop_size=hop_size,
        min_video_frames=None,
    )
    want = [oracle_sample(root, meta, plan, i) for i in range(len(plan))]
    assert_same_samples(windows.take(list(range(len(windows)))), want)
    assert {s["label"] for s in want} == {0, 1}


def test_process_pool_rows_follow_video_order(tmp_path: Path) -> None:
    # Lengths differ so a mix-up of fragments shows in the row counts and in the pixels.
    lengths = [23, 5, 40, 1, 17, 9]
    files = [
        write_video(tmp_path / "in" / f"v{i}.webm", n, (40, 56), seed=i)
        for i, n in enumerate(lengths)
    ]
    summary = convert_videos(tmp_path / "in", tmp_path / "root", workers=2, progress=False)

    assert summary.num_frames == sum(lengths)
    meta = read_meta(summary.root)
    assert [v["T"] for v in meta["videos"]] == lengths
    assert [v["start_row"] for v in meta["videos"]] == list(np.cumsum([0, *lengths[:-1]]))
    video_id, frame_idx = lance_columns(summary.root)
    np.testing.assert_array_equal(video_id, np.repeat(np.arange(6), lengths))
    np.testing.assert_array_equal(frame_idx, np.concatenate([np.arange(n) for n in lengths]))
    for v, file in enumerate(files):  # each stored frame is closest to its own source frame
        assert best_matches(stored_frames(summary.root, v), decode_rgb(file)) == list(
            range(lengths[v])
        )


def test_any_executor_gives_the_same_root(tmp_path: Path) -> None:
    folder = make_labelled_folder(tmp_path / "clips", per_class=2, num_frames=6)
    convert_videos(folder, tmp_path / "inline", workers=0, progress=False, splits="none")
    with ThreadPoolExecutor(2) as executor:
        convert_videos(
            folder, tmp_path / "threads", executor=executor, progress=False, splits="none"
        )
    assert read_meta(tmp_path / "inline")["videos"] == read_meta(tmp_path / "threads")["videos"]
    a = lance.dataset(str(tmp_path / "inline")).to_table()
    b = lance.dataset(str(tmp_path / "threads")).to_table()
    assert a.equals(b)


def test_commit_fragments_keeps_their_order_and_drops_strays(tmp_path: Path) -> None:
    from hf_lvf.write.frame_table import commit_fragments, write_fragments
    from hf_lvf.write.writer import frame_batches, frame_encoder

    def fragments(video_id: int, num_frames: int) -> list:
        frames = [np.full((4, 6, 3), 10 * video_id + i, np.uint8) for i in range(num_frames)]
        batches = frame_batches(
            video_id, "v", frames, encode=frame_encoder("webp", 90, False), on_frame=lambda s: None
        )
        return write_fragments(batches, tmp_path / "ds")

    (tmp_path / "ds").mkdir()
    first, second, stray = fragments(0, 40), fragments(1, 3), fragments(2, 5)
    commit_fragments(tmp_path / "ds", [*second, *first])  # any order: rows follow it
    video_id, frame_idx = lance_columns(tmp_path / "ds")
    np.testing.assert_array_equal(video_id, [1] * 3 + [0] * 40)
    np.testing.assert_array_equal(frame_idx, [*range(3), *range(40)])
    data_files = sorted(p.name for p in (tmp_path / "ds" / "data").iterdir())
    assert data_files == sorted(f.path for frag in [*first, *second] for f in frag.files)
    assert stray[0].files[0].path not in data_files


# --- codecs, sizes, resizing, frame rates ---


@pytest.mark.parametrize(
    ("name", "size", "codec"),
    [
        ("h264.mp4", (224, 224), "h264"),
        ("h264.mov", (200, 256), "h264"),
        ("vp9_odd.webm", (211, 317), "vp9"),
        ("mjpeg_odd.avi", (211, 317), "mjpeg"),
        ("h264_444_odd.mkv", (211, 317), "h264"),
    ],
)
def test_codecs_sizes_and_pixels(tmp_path: Path, name: str, size, codec: str) -> None:
    file = write_video(tmp_path / "in" / name, 8, size)
    root = convert_videos([file], tmp_path / "root", workers=0, progress=False).root
    (video,) = read_meta(root)["videos"]
    assert (video["T"], video["H"], video["W"], video["codec"]) == (8, *size, codec)
    assert video["path"] == file.as_posix()
    source = decode_rgb(file)
    got = stored_frames(root, 0)
    np.testing.assert_array_equal(got, [webp_roundtrip(f) for f in source])
    values = [psnr(a, b) for a, b in zip(got, source, strict=True)]
    assert min(values) >= PSNR_FLOOR_DB
    assert np.mean(values) >= PSNR_MEAN_FLOOR_DB


@pytest.mark.parametrize(
    ("resize", "stored", "recorded"),
    [(64, (64, 96), 64), ((40, 50), (40, 50), [40, 50]), (422, (422, 634), 422)],
)
def test_resize(tmp_path: Path, resize, stored, recorded) -> None:
    file = write_video(tmp_path / "odd.webm", 4, (211, 317))
    root = convert_videos(file, tmp_path / "root", resize=resize, workers=0, progress=False).root
    meta = read_meta(root)
    assert (meta["videos"][0]["H"], meta["videos"][0]["W"]) == stored
    assert meta["resize"] == recorded
    want = decode_scaled(file, stored, shrink=stored[0] <= 211)
    got = stored_frames(root, 0)
    assert got.shape == (4, *stored, 3)
    np.testing.assert_array_equal(got, [webp_roundtrip(w) for w in want])


def best_matches(got: np.ndarray, source: list[np.ndarray]) -> list[int]:
    """For each stored frame, the index of the source frame it is closest to."""
    return [int(np.argmax([psnr(g, s) for s in source])) for g in got]


@pytest.mark.parametrize(
    ("name", "fps", "picked"),
    [
        ("c30.mp4", 10, list(range(0, 30, 3))),  # ticks 0, 0.1, ... 0.9 s
        ("c30.webm", 15, list(range(0, 30, 2))),  # 1 ms timestamps: 67 ms is the 1/15 s frame
        ("c30.avi", 7.5, [0, 4, 8, 12, 16, 20, 24, 28]),
        ("c30.mkv", 60, [i // 2 for i in range(59)]),  # repeats; ticks stop at the last frame
    ],
)
def test_fps_resampling(tmp_path: Path, name: str, fps: float, picked: list[int]) -> None:
    file = write_video(tmp_path / name, 30, (48, 64), fps=30)
    root = convert_videos(file, tmp_path / "root", fps=fps, workers=0, progress=False).root
    (video,) = read_meta(root)["videos"]
    assert video["T"] == len(picked)
    assert (video["metadata"]["fps"], video["source_fps"]) == (float(fps), 30.0)
    assert best_matches(stored_frames(root, 0), decode_rgb(file)) == picked


def test_variable_frame_rate(tmp_path: Path) -> None:
    times = [0, 0.04, 0.08, 0.2, 0.24, 0.5, 0.52, 0.54, 0.9, 1.0]
    file = write_video(tmp_path / "vfr.mp4", len(times), (48, 64), times=times)
    as_is = convert_videos(file, tmp_path / "as_is", workers=0, progress=False)
    assert as_is.num_frames == 10
    root = convert_videos(file, tmp_path / "root", fps=10, workers=0, progress=False).root
    # Ticks at 0, 0.1, ... 1.0 s take the last frame shown at or before them.
    want = [0, 2, 3, 4, 4, 5, 7, 7, 7, 8, 9]
    assert read_meta(root)["videos"][0]["T"] == len(want)
    assert best_matches(stored_frames(root, 0), decode_rgb(file)) == want


# --- faults ---


def make_bad_inputs(folder: Path) -> dict[str, str]:
    """Broken files beside good ones; returns path -> the reason a skip must give."""
    write_video(folder / "good_a.mp4", 6, (32, 48))
    write_video(folder / "good_b.webm", 7, (32, 48), seed=1)
    (folder / "empty.mp4").write_bytes(b"")
    write_audio_only(folder / "audio_only.mp4")
    # Where a file is cut decides what the decoder sees: a missing index, a frame cut in
    # half, or fewer frames than the header declares.
    truncate(write_video(folder / "truncated.avi", 30, (48, 64)), 0.5)
    truncate(write_video(folder / "cut_in_a_frame.avi", 30, (32, 48)), 0.4)
    truncate(write_video(folder / "truncated.webm", 30, (32, 48)), 0.5)
    truncate(write_video(folder / "no_index.mp4", 30, (32, 48)), 0.5)  # moov atom is at the end
    (folder / "garbage.mkv").write_bytes(np.random.default_rng(0).bytes(4000))
    invalid = "FFmpeg cannot decode it: Invalid data found when processing input"
    return {
        "audio_only.mp4": r"the file has no video stream \(streams: audio\)$",
        "cut_in_a_frame.avi": re.escape(invalid) + r" \(in avcodec_send_packet\(\)\)$",
        "empty.mp4": r"the file is empty \(0 bytes\)$",
        "garbage.mkv": re.escape(invalid) + "$",
        "no_index.mp4": re.escape(invalid) + "$",
        "truncated.avi": "looks truncated: its header declares 30 frames but only 11 could be",
        "truncated.webm": "looks truncated: its header declares 1.00 s but the 13 decodable",
    }


def test_bad_files_are_skipped_with_a_warning_each(tmp_path: Path) -> None:
    reasons = make_bad_inputs(tmp_path / "in")
    with pytest.warns(SkippedVideoWarning) as record:
        summary = convert_videos(tmp_path / "in", tmp_path / "root", workers=0, progress=False)

    assert (summary.num_videos, summary.num_frames, summary.n_skipped) == (2, 13, 7)
    assert [s.path for s in summary.skipped] == sorted(reasons)
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 7
    for message, (path, reason) in zip(messages, sorted(reasons.items()), strict=True):
        assert message.startswith(f"skipped video {path!r}: ")
        assert re.search(reason, message), message
    meta = read_meta(summary.root)
    assert meta["n_skipped"] == 7
    assert [(v["id"], v["path"]) for v in meta["videos"]] == [(4, "good_a.mp4"), (5, "good_b.webm")]
    assert [v["start_row"] for v in meta["videos"]] == [0, 6]
    assert len(VideoWindows(summary.root)) == 13


def test_on_error_raise_names_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    write_video(tmp_path / "in" / "a.mp4", 6)
    truncate(write_video(tmp_path / "in" / "b.avi", 30), 0.4)
    with pytest.raises(VideoDecodeError, match=r"cannot convert video 'b.avi': the file looks"):
        convert_videos(tmp_path / "in", tmp_path / "root", on_error="raise", workers=0)
    assert not (tmp_path / "root").exists()
    assert leftovers(tmp_path, "root") == []


def test_no_convertible_video_raises(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "empty.mp4").write_bytes(b"")
    with (
        pytest.warns(SkippedVideoWarning, match="empty"),
        pytest.raises(VideoDecodeError, match=r"none of the 1 input videos could be converted"),
    ):
        convert_videos(tmp_path / "in", tmp_path / "root", workers=0, progress=False)
    assert not (tmp_path / "root").exists()
    assert leftovers(tmp_path, "root") == []


def wait_for_fragments(parent: Path, name: str, timeout_s: float = 60.0) -> None:
    """Block until a conversion into ``parent/name`` has written its first data file."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(parent.glob(f".{name}.tmp-*/data/*.lance")):
            return
        time.sleep(0.01)
    raise AssertionError(f"no conversion into {parent / name} started writing")


def many_videos(folder: Path, count: int = 8, num_frames: int = 60) -> Path:
    for i in range(count):
        write_video(folder / f"v{i:02d}.mp4", num_frames, (96, 128), seed=i)
    return folder


def test_killed_worker_raises_and_leaves_nothing(tmp_path: Path) -> None:
    folder = many_videos(tmp_path / "in")
    executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    worker_pid = executor.submit(os.getpid).result()

    def kill_when_writing() -> None:
        wait_for_fragments(tmp_path, "root")
        os.kill(worker_pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_writing, daemon=True)
    killer.start()
    try:
        with pytest.raises(BrokenProcessPool):
            convert_videos(folder, tmp_path / "root", executor=executor, progress=False)
    finally:
        executor.shutdown()
    killer.join()
    assert not (tmp_path / "root").exists()
    assert leftovers(tmp_path, "root") == []
    summary = convert_videos(folder, tmp_path / "root", workers=0, progress=False)
    assert summary.num_frames == 8 * 60


_CONVERT_SCRIPT = """
import sys
from hf_lvf.convert import convert_videos

if __name__ == "__main__":
    convert_videos(sys.argv[1], sys.argv[2], workers=int(sys.argv[3]), progress=False)
"""


@pytest.mark.parametrize(
    ("sig", "workers"), [(signal.SIGINT, 2), (signal.SIGKILL, 0)], ids=["ctrl-c", "killed"]
)
def test_interrupted_conversion_then_rerun(tmp_path: Path, sig: int, workers: int) -> None:
    """Ctrl-C (SIGINT to the whole process group, workers included, as a terminal sends it)
    cleans up at once; a killed parent leaves a scratch folder that the next run removes."""
    folder = many_videos(tmp_path / "in", count=16)  # far from done when the signal comes
    script = tmp_path / "convert.py"
    script.write_text(textwrap.dedent(_CONVERT_SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder), str(tmp_path / "root"), str(workers)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a shell job
        preexec_fn=sigint_default,  # whatever SIGINT the suite started with
    )
    try:
        wait_for_fragments(tmp_path, "root")
        os.killpg(proc.pid, sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert not (tmp_path / "root").exists()
    if sig == signal.SIGINT:
        assert stderr.count("KeyboardInterrupt") == 1, stderr  # the parent's, no worker's
        assert leftovers(tmp_path, "root") == []
    else:
        assert len(leftovers(tmp_path, "root")) == 1
    summary = convert_videos(folder, tmp_path / "root", workers=0, progress=False)
    assert summary.num_frames == 16 * 60
    assert leftovers(tmp_path, "root") == []


_MEMORY_SCRIPT = """
import resource, sys
from hf_lvf.convert import convert_videos

convert_videos(sys.argv[1], sys.argv[2], workers=0, progress=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_kib(tmp_path: Path, num_frames: int) -> int:
    """Peak memory of a fresh process converting one 128x160 clip of ``num_frames``."""
    file = write_video(tmp_path / f"n{num_frames}.webm", num_frames, (128, 160))
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, str(file), str(tmp_path / f"root{num_frames}")],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.split()[-1])


def test_peak_memory_does_not_grow_with_video_length(tmp_path: Path) -> None:
    # 540 more frames are 33 MB decoded, about 1.5 MB as WebP. Measured: +1.4 MB from 100 to
    # 400 frames, +4.9 MB to 1600 (lance buffers encoded pages up to a fixed size per file).
    short, long = peak_rss_kib(tmp_path, 60), peak_rss_kib(tmp_path, 600)
    assert long - short < 12 * 1024, (short, long)


# --- arguments and inputs ---


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"quality": 101}, ValueError, r"quality must be an integer in \[0, 100\], got 101"),
        ({"resize": 0}, ValueError, r"resize must be >= 1, got 0"),
        ({"resize": (10, 0)}, ValueError, r"resize must be None, a positive int .* \(10, 0\)"),
        ({"resize": "64"}, ValueError, r"resize must be None, .* got '64'"),
        ({"resize": (10**6, 10**6)}, ValueError, r"larger than WebP's 16383 pixels per side"),
        (
            {"resize": 8000},
            ValueError,
            r"resize=8000 would store 8000x8000 \(HxW\) = 64,000,000 pixels per frame, above "
            r"max_frame_pixels=33,554,432",
        ),
        ({"fps": 0}, ValueError, r"fps must be a positive finite number or None, got 0"),
        ({"fps": float("nan")}, ValueError, r"fps must be a positive .* got nan"),
        ({"workers": -1}, ValueError, r"workers must be None or an integer >= 0, got -1"),
        ({"on_error": "ignore"}, ValueError, r"on_error must be 'skip' or 'raise', got 'ignore'"),
        ({"executor": "dask"}, TypeError, r"executor must be a concurrent.futures.Executor"),
    ],
)
def test_bad_arguments_fail_before_any_work(tmp_path: Path, kwargs, error, match) -> None:
    file = write_video(tmp_path / "a.mp4", 2)
    with pytest.raises(error, match=match):
        convert_videos(file, tmp_path / "root", **kwargs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mp4"]


def test_files_and_globs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_video(Path("a/x.mp4"), 3)
    write_video(Path("a/sub/y.webm"), 4)
    write_video(Path("b/z.avi"), 5)
    summary = convert_videos(["a/**/*.webm", "b/z.avi", "a/x.mp4"], "root", workers=0)
    meta = read_meta(summary.root)
    assert [(v["path"], v["key"], v["T"]) for v in meta["videos"]] == [
        ("a/sub/y.webm", "a/sub/y", 4),
        ("a/x.mp4", "a/x", 3),
        ("b/z.avi", "b/z", 5),
    ]
    assert "label_names" not in meta
    assert [v["metadata"] for v in meta["videos"]] == [{"fps": 30.0}] * 3


def test_folder_without_labels_and_with_jsonl_metadata(tmp_path: Path) -> None:
    write_video(tmp_path / "in" / "one" / "a.mp4", 3)
    write_video(tmp_path / "in" / "one" / "b.mp4", 3)
    write_video(tmp_path / "in" / ".hidden" / "c.mp4", 3)
    rows = [{"file_name": "a.mp4", "caption": "a cat", "ok": True}, {"file_name": "b.mp4"}]
    (tmp_path / "in" / "one" / "metadata.jsonl").write_text(
        "\n".join(json.dumps(r) for r in rows) + "\n"
    )
    meta = read_meta(convert_videos(tmp_path / "in", tmp_path / "root", workers=0).root)
    # One class folder only: no label (as datasets' videofolder); the hidden folder is skipped.
    assert [(v["path"], v["metadata"]) for v in meta["videos"]] == [
        ("one/a.mp4", {"caption": "a cat", "ok": True, "fps": 30.0}),
        ("one/b.mp4", {"caption": None, "ok": None, "fps": 30.0}),
    ]


@pytest.mark.parametrize(
    ("setup", "error", "match"),
    [
        ("missing", FileNotFoundError, r"input '.*nope' is not a file, a folder or a glob"),
        ("no_match", FileNotFoundError, r"no file matches the input pattern '.*\*.mkv'"),
        ("no_videos", FileNotFoundError, r"no video files \(.avi, .*\) in folder"),
        ("unknown_file", ValueError, r"names 'ghost.mp4', which is not a video file of folder"),
        ("no_file_name", ValueError, r"has no 'file_name' column \(columns: name, split\)"),
        ("escape", ValueError, r"file_name '../x.mp4' points outside folder"),
        ("reserved", ValueError, r"metadata field 'fps' is reserved"),
        ("shadow", ValueError, r"metadata field 'filename' of video 'a' would shadow"),
        ("duplicate", ValueError, r"two inputs give the same video path 'a.mp4'"),
    ],
)
def test_bad_inputs(tmp_path: Path, monkeypatch, setup: str, error, match: str) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "in"
    write_video(folder / "a.mp4", 2)
    inputs: list = [folder]
    metadata = {
        "unknown_file": "file_name,split\nghost.mp4,train\n",
        "no_file_name": "name,split\na.mp4,train\n",
        "escape": "file_name,split\n../x.mp4,train\n",
        "reserved": "file_name,fps\na.mp4,25\n",
        "shadow": "file_name,filename\na.mp4,zzz\n",
    }
    if setup in metadata:
        (folder / "metadata.csv").write_text(metadata[setup])
    elif setup == "missing":
        inputs = [tmp_path / "nope"]
    elif setup == "no_match":
        inputs = [str(folder / "*.mkv")]
    elif setup == "no_videos":
        (tmp_path / "empty").mkdir()
        inputs = [tmp_path / "empty"]
    elif setup == "duplicate":
        inputs = [folder, "in/../in"]
    with pytest.raises(error, match=match):
        convert_videos(inputs, tmp_path / "root", workers=0)
    assert not (tmp_path / "root").exists()


def test_existing_root_and_overwrite(tmp_path: Path) -> None:
    file = write_video(tmp_path / "a.mp4", 3)
    convert_videos(file, tmp_path / "root", workers=0)
    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True"):
        convert_videos(file, tmp_path / "root", workers=0)
    summary = convert_videos(file, tmp_path / "root", fps=10, overwrite=True, workers=0)
    assert read_meta(summary.root)["videos"][0]["T"] == 1
    assert leftovers(tmp_path, "root") == []


def test_missing_pyav_gives_the_install_hint(tmp_path: Path, monkeypatch) -> None:
    file = write_video(tmp_path / "a.mp4", 2)
    monkeypatch.setitem(sys.modules, "av", None)  # what `import av` sees when not installed
    with pytest.raises(ImportError, match=r"pip install 'hf-lvf\[video\]'"):
        convert_videos(file, tmp_path / "root", workers=0)
    assert not (tmp_path / "root").exists()


def test_cli_convert_prints_a_summary(tmp_path: Path, capsys) -> None:
    reasons = make_bad_inputs(tmp_path / "in")
    code = cli_main(
        ["convert", str(tmp_path / "in"), str(tmp_path / "root"), "--workers", "0"]
        + ["--resize", "16", "--fps", "15", "--quality", "80", "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "videos    2\n" in out and "skipped   7\n" in out
    for path in reasons:
        assert f"  skipped {path}: " in out
    meta = read_meta(tmp_path / "root")
    assert (meta["quality"], meta["resize"], meta["videos"][0]["H"]) == (80, 16, 16)
    assert cli_main(["convert", str(tmp_path / "in"), str(tmp_path / "root")]) == 2
    assert "already exists" in capsys.readouterr().err


def test_public_api() -> None:
    assert hf_lvf.convert.convert_videos is convert_videos
    assert "convert_videos" in hf_lvf.convert.__all__
    with pytest.raises(AttributeError, match=r"hf_lvf.convert_videos moved: use hf_lvf.convert"):
        hf_lvf.convert_videos  # noqa: B018
