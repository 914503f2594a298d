"""Image streams (FORMAT.md, "Image streams"): more than one encoded image per frame row,
written by write_frames from frames given as mappings {stream name: image}."""

from __future__ import annotations

import io
import json
from pathlib import Path

import lance
import numpy as np
import pytest
from PIL import Image

from hf_lvf import write_frames

TOP, WRIST = "observation.images.top", "observation.images.wrist"


def _frames(n: int, seed: int, wrist=(8, 12), top=(16, 24)):
    rng = np.random.default_rng(seed)
    return [
        {
            TOP: rng.integers(0, 255, (*top, 3), np.uint8),
            WRIST: rng.integers(0, 255, (*wrist, 3), np.uint8),
        }
        for _ in range(n)
    ]


def _decoded(blobs) -> list[np.ndarray]:
    return [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs]


def test_streams_written_beside_bytes_and_fields(tmp_path: Path) -> None:
    a, b = _frames(5, 0), _frames(3, 1, wrist=(10, 6))
    videos = [
        {"key": "a", "frames": a, "frame_fields": {"observation.state": np.zeros((5, 3))}},
        {"key": "b", "frames": iter(b), "frame_fields": {"observation.state": np.ones((3, 3))}},
    ]
    root = write_frames(tmp_path / "r", videos, codec="png", video_column=TOP)
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["video_column"] == TOP
    assert meta["streams"] == {
        WRIST: {"H": 8, "W": 12, "encoding": "png", "quality": None, "lossless": True}
    }
    # The second video's wrist images are 10x6: its entry says so; the first's agrees.
    assert "streams" not in meta["videos"][0]
    assert meta["videos"][1]["streams"] == {WRIST: {"H": 10, "W": 6}}
    table = lance.dataset(str(root)).to_table().flatten().flatten()
    assert table.column_names.count("observation.state") == 1  # one struct: fields, streams
    frames = a + b
    for got, frame in zip(_decoded(table.column("bytes").to_pylist()), frames, strict=True):
        np.testing.assert_array_equal(got, frame[TOP])
    for got, frame in zip(_decoded(table.column(WRIST).to_pylist()), frames, strict=True):
        np.testing.assert_array_equal(got, frame[WRIST])


def test_a_reader_of_bytes_alone_reads_no_stream(tmp_path: Path) -> None:
    """The reference reader asks for bytes only: a root with streams stays readable by it, and
    the bytes it reads are the main stream's alone."""
    plain = write_frames(tmp_path / "plain", [("a", [f[TOP] for f in _frames(4, 0)], None)])
    both = write_frames(tmp_path / "both", [("a", _frames(4, 0), None)], video_column=TOP)
    tables = [lance.dataset(str(r)).to_table(columns=["bytes"]) for r in (plain, both)]
    assert tables[0].column("bytes").to_pylist() == tables[1].column("bytes").to_pylist()
    assert json.loads((plain / "_metadata.json").read_text()).get("streams") is None


def test_a_frame_without_a_stream_names_the_video_and_frame(tmp_path: Path) -> None:
    frames = _frames(4, 0)
    del frames[2][WRIST]
    with pytest.raises(ValueError, match=r"frame 2 of video 'a' has the images \['observation"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)
    assert not (tmp_path / "r").exists()


def test_a_stream_image_of_another_size_names_the_video_and_frame(tmp_path: Path) -> None:
    frames = _frames(4, 0)
    frames[3][WRIST] = np.zeros((9, 12, 3), np.uint8)
    with pytest.raises(ValueError, match=r"'observation.images.wrist' of frame 3 of video 'a'"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)
    frames[3][WRIST] = np.zeros((8, 12), np.uint8)
    with pytest.raises(ValueError, match=r"frame 3 of video 'a' must be a \(H, W, 3\)"):
        write_frames(tmp_path / "r", [("a", frames, None)], video_column=TOP)


def test_a_mapping_without_video_column_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"without the key 'video' \(video_column\)"):
        write_frames(tmp_path / "r", [("a", _frames(2, 0), None)])


def test_appending_keeps_the_streams(tmp_path: Path) -> None:
    root = write_frames(tmp_path / "r", [("a", _frames(3, 0), None)], video_column=TOP)
    write_frames(root, [("b", _frames(2, 1, wrist=(4, 4)), None)], mode="append")
    meta = json.loads((root / "_metadata.json").read_text())
    assert [v["T"] for v in meta["videos"]] == [3, 2]
    assert meta["videos"][1]["streams"] == {WRIST: {"H": 4, "W": 4}}
    with pytest.raises(TypeError, match="frame 0 of video 'c' is a ndarray"):
        write_frames(root, [("c", [np.zeros((16, 24, 3), np.uint8)], None)], mode="append")
