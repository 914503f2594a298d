"""Writing roots in the codec the job needs: write_frames, convert_videos, ``hf-lvf convert``,
merge_roots and appends, with what _metadata.json records and what is refused."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import lance
import numpy as np
import pytest
from _roots import make_frames
from _videos import decode_rgb, write_video
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos
from hf_lvf.write import merge_roots, write_frames

JPEG90 = {"codec": "jpeg", "quality": 90}
SIGNATURES = {"webp": b"RIFF", "jpeg": b"\xff\xd8\xff", "png": b"\x89PNG"}


def _meta(root) -> dict:
    return json.loads((Path(root) / "_metadata.json").read_text())


def _rows(root) -> list[bytes]:
    meta = _meta(root)
    ds = lance.dataset(str(root), version=meta["lance_version"])
    return ds.to_table(columns=["bytes"]).column("bytes").to_pylist()


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its SHA-256 and mtime, to show nothing changed."""
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _videos(count=2, frames=3, seed=0):
    return [
        (f"v{i}", make_frames(frames, 32, 48, seed=seed + i), {"label": i}) for i in range(count)
    ]


@pytest.mark.parametrize(
    ("options", "recorded"),
    [
        ({}, ("webp", 90, False)),
        ({"codec": "webp", "quality": 90}, ("webp", 90, False)),
        ({"codec": "webp", "lossless": True}, ("webp", None, True)),
        ({"codec": "jpeg", "quality": 85}, ("jpeg", 85, False)),
        ({"codec": "png"}, ("png", None, True)),
        ({"codec": "png", "quality": 10}, ("png", None, True)),  # quality means nothing there
    ],
)
def test_write_frames_records_the_codec(tmp_path, options, recorded):
    videos = _videos()
    root = write_frames(tmp_path / "r", videos, **options)
    meta = _meta(root)
    assert (meta["encoding"], meta["quality"], meta["lossless"]) == recorded
    rows = _rows(root)
    assert all(row.startswith(SIGNATURES[recorded[0]]) for row in rows)
    if recorded[0] == "webp" and recorded[2]:
        assert all(row[12:16] == b"VP8L" for row in rows)
    got = VideoWindows(root, window_length=3).read_video([0, 1])
    want = np.stack([np.stack(frames) for _, frames, _ in videos])
    if recorded[2]:  # lossless: the frames themselves
        np.testing.assert_array_equal(got, want)
    else:  # what Pillow decodes from the stored bytes
        pillow = [np.asarray(Image.open(io.BytesIO(r)).convert("RGB")) for r in rows]
        np.testing.assert_array_equal(got.reshape(-1, 32, 48, 3), np.stack(pillow))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"codec": "jpeg", "lossless": True}, r"lossless=True is not possible with codec='jpeg'"),
        ({"codec": "gif"}, r"codec must be one of 'webp', 'jpeg', 'png', got 'gif'"),
        ({"codec": "webp", "lossless": 1}, r"lossless must be True or False, got 1"),
        ({"codec": "jpeg", "quality": 101}, r"quality must be an integer in \[0, 100\], got 101"),
    ],
)
def test_bad_codec_options_before_any_work(tmp_path, options, message):
    def videos():
        raise AssertionError("no frame may be asked for")
        yield

    with pytest.raises(ValueError, match=message):
        write_frames(tmp_path / "r", videos(), **options)
    with pytest.raises(ValueError, match=message):
        convert_videos(tmp_path / "nothing_here.mp4", tmp_path / "c", workers=0, **options)
    assert list(tmp_path.iterdir()) == []


def test_cli_lossless_jpeg_is_refused(tmp_path, capsys):
    clip = write_video(tmp_path / "clip.mp4", 4, (32, 48))
    code = cli_main(["convert", str(clip), str(tmp_path / "r"), "--codec", "jpeg", "--lossless"])
    assert code != 0
    assert "lossless=True is not possible with codec='jpeg'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("flags", "recorded"),
    [
        (["--codec", "jpeg", "--quality", "90"], ("jpeg", 90, False)),
        (["--codec", "png"], ("png", None, True)),
        (["--lossless"], ("webp", None, True)),
    ],
)
def test_convert_codecs(tmp_path, flags, recorded):
    clip = write_video(tmp_path / "clip.mp4", 5, (32, 48), seed=3)
    root = tmp_path / "r"
    assert (
        cli_main(["convert", str(clip), str(root), "--workers", "0", "--no-progress", *flags]) == 0
    )
    meta = _meta(root)
    assert (meta["encoding"], meta["quality"], meta["lossless"]) == recorded
    assert all(row.startswith(SIGNATURES[recorded[0]]) for row in _rows(root))
    got = VideoWindows(root, window_length=5).read_video([0])[0]
    if recorded[2]:  # lossless roots give the decoded source frames exactly
        np.testing.assert_array_equal(got, np.stack(decode_rgb(clip)))


@pytest.mark.parametrize(
    ("first", "then", "message"),
    [
        (
            {},
            {"codec": "jpeg", "quality": 90},
            "codec='jpeg' differs from the root's encoding 'webp'",
        ),
        ({}, {"quality": 80}, "quality=80 differs from the root's quality 90"),
        ({}, {"lossless": True}, "lossless=True differs from the root's lossless False"),
        (
            {"codec": "png"},
            {"lossless": True},
            "codec='webp' differs from the root's encoding 'png'",
        ),
        (JPEG90, {"codec": "jpeg", "quality": 95}, "quality=95 differs from the root's quality 90"),
    ],
)
def test_append_in_another_codec_is_refused_root_unchanged(tmp_path, first, then, message):
    root = write_frames(tmp_path / "r", _videos(), **first)
    before = _snapshot(root)
    with pytest.raises(ValueError, match=message):
        write_frames(root, _videos(seed=5)[:1], mode="append", **then)
    assert _snapshot(root) == before
    clip = write_video(tmp_path / "clips" / "new.mp4", 4, (32, 48))
    with pytest.raises(ValueError, match=message):
        convert_videos([clip], root, mode="append", workers=0, progress=False, **then)
    assert _snapshot(root) == before


def test_append_in_the_same_codec(tmp_path):
    root = write_frames(tmp_path / "r", _videos(), **JPEG90)
    write_frames(root, [("v9", make_frames(2, 32, 48, seed=9), None)], mode="append", **JPEG90)
    meta = _meta(root)
    assert (meta["encoding"], meta["quality"], meta["lossless"]) == ("jpeg", 90, False)
    assert len(meta["videos"]) == 3


def test_merge_roots_of_other_codecs_is_refused(tmp_path):
    webp = write_frames(tmp_path / "a", _videos())
    jpeg = write_frames(tmp_path / "b", _videos(seed=3)[:1], codec="jpeg", quality=65)
    message = r"cannot merge .*/b' into a root with .*/a': codec='jpeg' differs from the root's"
    with pytest.raises(ValueError, match=message + " encoding 'webp'"):
        merge_roots([webp, jpeg], tmp_path / "m")
    assert not (tmp_path / "m").exists()
    same = write_frames(
        tmp_path / "c", [("w", make_frames(2, 32, 48, seed=8), None)], codec="jpeg", quality=65
    )
    merged = merge_roots([jpeg, same], tmp_path / "m")
    assert (_meta(merged)["encoding"], _meta(merged)["quality"]) == ("jpeg", 65)
