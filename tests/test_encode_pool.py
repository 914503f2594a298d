"""One video's frames encoded on a thread pool: the same bytes, in order, a bounded number of
frames in flight; convert_videos sizes the pool to the cores its workers leave."""

from __future__ import annotations

import threading
from pathlib import Path

import lance
import numpy as np
import pytest
from _roots import read_meta
from _videos import write_video

from hf_lvf.convert import convert_videos, pool
from hf_lvf.convert.decoding import _FrameOptions
from hf_lvf.decode import encode_frame, encode_in_order
from hf_lvf.decode.encode import IN_FLIGHT_PER_THREAD
from hf_lvf.write.synthetic import synthetic_frames


def _frames(n: int) -> list[np.ndarray]:
    return list(synthetic_frames(n, 24, 40, seed=3))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_encoded_in_order_with_the_bytes_of_one_thread(threads: int) -> None:
    frames = _frames(11)
    want = [encode_frame(f, codec="webp", quality=90) for f in frames]
    got = list(encode_in_order(frames, lambda f: encode_frame(f, quality=90), threads=threads))
    assert [blob for _, blob in got] == want
    assert all(a is b for (a, _), b in zip(got, frames, strict=True))


@pytest.mark.parametrize("threads", [2, 4])
def test_frames_in_flight_stay_bounded(threads: int) -> None:
    pulled, handed_out, most = [0], [0], [0]

    def source():
        for frame in _frames(40):
            pulled[0] += 1
            most[0] = max(most[0], pulled[0] - handed_out[0])
            yield frame

    for _ in encode_in_order(source(), lambda f: f.tobytes()[:8], threads=threads):
        handed_out[0] += 1
    assert handed_out[0] == 40
    # The frames queued on the pool plus the one being submitted: never the whole video.
    assert most[0] == IN_FLIGHT_PER_THREAD * threads + 1


def test_encodes_run_on_the_pool_while_the_caller_decodes() -> None:
    caller = threading.get_ident()
    where: set[int] = set()

    def encode(frame: np.ndarray) -> bytes:
        where.add(threading.get_ident())
        return frame.tobytes()

    list(encode_in_order(_frames(8), encode, threads=2))
    assert where and caller not in where


def test_an_encode_error_is_raised_in_order_and_stops_the_pool() -> None:
    frames, seen = _frames(6), []

    def encode(frame: np.ndarray) -> bytes:
        if frame is frames[3]:
            raise ValueError("bad frame 3")
        return b"x"

    with pytest.raises(ValueError, match="bad frame 3"):
        for frame, _ in encode_in_order(frames, encode, threads=2):
            seen.append(frame)
    assert len(seen) == 3
    assert not [t for t in threading.enumerate() if t.name.startswith("hf_lvf-encode")]


def test_closing_early_leaves_no_encode_thread() -> None:
    encoded = encode_in_order(_frames(30), lambda f: f.tobytes(), threads=2)
    next(encoded)
    encoded.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("hf_lvf-encode")]


def _table(root: Path):
    return lance.dataset(str(root)).to_table()


def test_one_video_converts_to_the_same_bytes_with_any_encode_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_video(tmp_path / "in" / "long.mp4", 70, (48, 64), seed=5)  # 3 record batches
    roots = {}
    for threads in (1, 2, 3):
        roots[threads] = tmp_path / f"root{threads}"
        monkeypatch.setattr("hf_lvf.convert.api.encode_threads", lambda *a, n=threads: n)
        convert_videos(tmp_path / "in", roots[threads], workers=0, progress=False)
    one = _table(roots[1])
    assert one.num_rows == 70
    for threads in (2, 3):
        assert _table(roots[threads]).equals(one)
        # PSNR is measured on the same frames, whatever thread encoded them.
        assert read_meta(roots[threads])["videos"] == read_meta(roots[1])["videos"]


@pytest.mark.parametrize(
    ("codec", "lossless", "workers", "num_videos", "cores", "want"),
    [
        ("jpeg", False, None, 1, 2, 2),  # one video: its encodes take both cores
        ("jpeg", False, None, 3, 2, 1),  # two worker processes already fill them
        ("jpeg", False, 0, 3, 2, 2),  # in this process, one video at a time
        ("jpeg", False, 1, 3, 4, 4),
        ("jpeg", False, 2, 3, 8, 4),
        ("webp", False, None, 1, 2, 2),  # Pillow's lossy WebP encoder releases the GIL too
        ("webp", False, 2, 3, 8, 4),
        ("webp", True, None, 1, 2, 1),  # its lossless WebP encoder holds it
        ("png", True, 0, 1, 4, 1),  # and so does its PNG encoder
        ("png", False, 0, 1, 4, 1),  # PNG is lossless whatever lossless= says
    ],
)
def test_encode_threads_share_the_cores_the_workers_leave(
    monkeypatch: pytest.MonkeyPatch, codec, lossless, workers, num_videos, cores, want
) -> None:
    monkeypatch.setattr(pool, "_cores", lambda: cores)
    options = _FrameOptions(codec=codec, quality=90, lossless=lossless)
    assert pool.encode_threads(options, workers, None, num_videos) == want
    assert pool.encode_threads(options, workers, object(), num_videos) == 1  # an executor


def test_tasks_carry_the_encode_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(2):
        write_video(tmp_path / "in" / f"v{i}.mp4", 3, (16, 16), seed=i)
    monkeypatch.setattr("hf_lvf.convert.api.encode_threads", lambda *args: 7)
    tasks = []
    real_run = pool._run

    def run(tasks_, submit, *args, **kwargs):  # record the tasks, convert them here
        tasks.extend(tasks_)
        return real_run(tasks_, None, *args, **kwargs)

    monkeypatch.setattr("hf_lvf.convert.api._run", run)
    convert_videos(tmp_path / "in", tmp_path / "root", workers=0, progress=False)
    assert [t.encode_threads for t in tasks] == [7, 7]
