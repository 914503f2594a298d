"""convert_videos of webdataset / video2dataset shards written with webdataset's own TarWriter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import webdataset as wds
from _signals import sigint_default
from _videos import write_video

from hf_lvf.convert import convert_videos
from hf_lvf.convert.webdataset import expand_braces
from hf_lvf.errors import SkippedVideoWarning, VideoDecodeError


def _shards(tmp_path: Path, *, missing_video: bool = False) -> Path:
    folder = tmp_path / "shards"
    folder.mkdir()
    for s in range(2):
        with wds.TarWriter(str(folder / f"{s:05d}.tar")) as sink:
            for k in range(2):
                n = 2 * s + k
                mp4 = write_video(tmp_path / f"src{n}.mp4", 10 + n, fps=10, seed=n).read_bytes()
                meta = {
                    "url": f"http://x/{n}",
                    "width": 64,
                    "clips": [[0.0, 0.5], [0.4, 1.0]],
                    "caption": [f"clip a{n}", f"clip b{n}"],
                }
                sample = {
                    "__key__": f"{n:06d}",
                    "mp4": mp4,
                    "txt": f"video {n}",
                    "json": json.dumps(meta).encode(),
                }
                sink.write(sample)
            if missing_video and s == 1:
                sink.write({"__key__": "999999", "txt": "no video here"})
    return folder


def test_brace_patterns() -> None:
    assert expand_braces("s/{00000..00002}.tar") == ["s/00000.tar", "s/00001.tar", "s/00002.tar"]
    assert expand_braces("{a,b}-{1..2}") == ["a-1", "a-2", "b-1", "b-2"]


def test_one_video_per_sample_captions_and_spans(tmp_path: Path) -> None:
    folder = _shards(tmp_path)
    summary = convert_videos(
        str(folder / "{00000..00001}.tar"), tmp_path / "root", workers=0, fps=20
    )
    assert summary.num_videos == 4
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    videos = meta["videos"]
    assert [v["metadata"]["caption"] for v in videos] == [f"video {n}" for n in range(4)]
    assert [v["metadata"]["url"] for v in videos] == [f"http://x/{n}" for n in range(4)]
    assert [v["key"] for v in videos] == [
        "00000/000000",
        "00000/000001",
        "00001/000002",
        "00001/000003",
    ]
    # spans: seconds * converted fps (20), clipped to the video's frames
    assert videos[0]["spans"] == [
        {"start_frame": 0, "end_frame": 10, "caption": "clip a0"},
        {"start_frame": 8, "end_frame": min(20, videos[0]["T"]), "caption": "clip b0"},
    ]
    assert meta["lineage"]["source_format"] == "webdataset"


def test_a_clip_cut_by_video2dataset_spans_its_whole_video(tmp_path: Path) -> None:
    """video2dataset's clipping writes each clip with ``clips`` = [its span in the original
    video] and timestamps reset to 0: the span is the whole clip."""
    mp4 = write_video(tmp_path / "clip.mp4", 20, fps=10).read_bytes()
    meta = {"clips": [[30.0, 32.0]], "key": "000007_00001", "caption": ["a", "b", "c"]}
    with wds.TarWriter(str(tmp_path / "cut.tar")) as sink:
        sink.write(
            {"__key__": "000007_00001", "mp4": mp4, "txt": "a clip", "json": json.dumps(meta)}
        )
    convert_videos(str(tmp_path / "cut.tar"), tmp_path / "root", workers=0)
    (video,) = json.loads((tmp_path / "root/_metadata.json").read_text())["videos"]
    assert video["spans"] == [{"start_frame": 0, "end_frame": 20, "caption": "a clip"}]


def test_two_shards_of_one_name_are_refused(tmp_path: Path) -> None:
    folder = _shards(tmp_path)
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "00000.tar").write_bytes((folder / "00000.tar").read_bytes())
    with pytest.raises(ValueError, match="'00000.tar/000000.mp4'"):
        convert_videos(
            [str(folder / "00000.tar"), str(tmp_path / "again/00000.tar")], tmp_path / "r"
        )
    assert not (tmp_path / "r").exists()


def test_a_folder_of_shards(tmp_path: Path) -> None:
    folder = _shards(tmp_path)
    summary = convert_videos(folder, tmp_path / "root", workers=0)
    assert summary.num_videos == 4


def test_sample_without_video_is_a_named_skip(tmp_path: Path) -> None:
    folder = _shards(tmp_path, missing_video=True)
    shards = [str(folder / "00000.tar"), str(folder / "00001.tar")]
    with pytest.warns(SkippedVideoWarning, match="00001.tar/999999"):
        summary = convert_videos(shards, tmp_path / "root", workers=0)
    assert summary.num_videos == 4 and summary.n_skipped == 1
    with pytest.raises(VideoDecodeError, match="00001.tar/999999"):
        convert_videos(shards, tmp_path / "r2", workers=0, on_error="raise")
    assert not (tmp_path / "r2").exists()


def test_truncated_member_is_a_named_skip(tmp_path: Path) -> None:
    folder = _shards(tmp_path)
    tar = folder / "00001.tar"
    tar.write_bytes(tar.read_bytes()[: tar.stat().st_size // 2])
    with pytest.warns(SkippedVideoWarning, match="00001.tar"):
        summary = convert_videos(
            [str(folder / "00000.tar"), str(tar)], tmp_path / "root", workers=0
        )
    assert summary.num_videos >= 2


def test_append_more_shards(tmp_path: Path) -> None:
    folder = _shards(tmp_path)
    convert_videos(str(folder / "00000.tar"), tmp_path / "root", workers=0)
    summary = convert_videos(str(folder / "00001.tar"), tmp_path / "root", workers=0, mode="append")
    assert summary.num_videos == 2
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert len(meta["videos"]) == 4


_SCRIPT = """
import sys
from hf_lvf.convert import convert_videos

if __name__ == "__main__":
    convert_videos(sys.argv[1], sys.argv[2], workers=2, progress=False)
"""


def test_ctrl_c_mid_import_leaves_nothing(tmp_path: Path) -> None:
    """SIGINT to the process group (as a terminal sends it) while workers write."""
    with wds.TarWriter(str(tmp_path / "big.tar")) as sink:
        for n in range(8):
            mp4 = write_video(tmp_path / f"b{n}.mp4", 60, (96, 128), seed=n).read_bytes()
            sink.write({"__key__": f"{n:03d}", "mp4": mp4})
    script = tmp_path / "convert.py"
    script.write_text(_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "big.tar"), str(tmp_path / "root")],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint_default,  # whatever SIGINT the suite started with
    )
    try:
        deadline = time.monotonic() + 60
        while not any(tmp_path.glob(".root.tmp-*/data/*.lance")):
            assert time.monotonic() < deadline, "the import never started writing"
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr
    assert not (tmp_path / "root").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".root.")] == []


@pytest.mark.s3
def test_shards_on_an_object_store(tmp_path: Path, s3) -> None:
    folder = _shards(tmp_path)
    uri = s3.upload(folder, s3.new_bucket(), "shards")
    summary = convert_videos(
        f"{uri}/{{00000..00001}}.tar", tmp_path / "root", workers=0, storage_options=s3.options()
    )
    assert summary.num_videos == 4
    meta = json.loads((tmp_path / "root/_metadata.json").read_text())
    assert [v["metadata"]["caption"] for v in meta["videos"]] == [f"video {n}" for n in range(4)]
    assert meta["lineage"]["source"] == [f"{uri}/00000.tar", f"{uri}/00001.tar"]
