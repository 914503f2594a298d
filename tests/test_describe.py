"""``hf_lvf.describe``: counts checked against the metadata, on roots written by hf_lvf, by
another tool and by a conversion, local and on the Hub; problems listed, not raised; no frame
read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _roots import FRAME_SIZE, foreign_videos, hf_root, write_foreign_root
from _videos import write_video
from hub_server import HubServer

import hf_lvf
from hf_lvf import RootNotFoundError, VideoWindows, describe
from hf_lvf.card.describe import format_description
from hf_lvf.errors import LayoutError


def _metadata(root: Path) -> dict:
    return json.loads((root / "_metadata.json").read_text())


def _files_bytes(root: Path, sub: str = "") -> int:
    return sum(p.stat().st_size for p in (root / sub).rglob("*") if p.is_file())


def _check_counts(described: dict, meta: dict, **params) -> None:
    """What describe says against the metadata itself (FORMAT.md's rules, by hand)."""
    videos = meta["videos"]
    lengths = [v["T"] for v in videos]
    assert described["videos"] == len(videos)
    assert described["frames"] == sum(lengths)
    assert described["frames_per_video"] == {
        "min": min(lengths),
        "mean": sum(lengths) / len(lengths),
        "max": max(lengths),
    }
    sizes: dict[tuple[int, int], list[int]] = {}
    for v in videos:
        counts = sizes.setdefault((v["H"], v["W"]), [0, 0])
        counts[0] += 1
        counts[1] += v["T"]
    assert sorted(
        (s["height"], s["width"], s["videos"], s["frames"]) for s in described["frame_sizes"]
    ) == sorted((h, w, n, f) for (h, w), (n, f) in sizes.items())
    window_length = params.get("window_length", 1)
    stride = params.get("frame_skip", 0) + 1
    hop = params.get("hop_size", 1)
    span = (window_length - 1) * stride + 1
    least = max(span, params.get("min_video_frames") or span)
    per_video = [(t - span) // hop + 1 if t >= least else 0 for t in lengths]
    assert described["windows"] == sum(per_video)
    assert described["videos_with_windows"] == sum(n > 0 for n in per_video)
    json.dumps(described, allow_nan=False)  # for scripts: plain JSON


PARAMS = [
    {},
    {"window_length": 4},
    {"window_length": 3, "frame_skip": 2, "hop_size": 2},
    {"window_length": 2, "min_video_frames": 10},
]


@pytest.mark.parametrize("params", PARAMS, ids=["default", "w4", "skip-hop", "min-frames"])
def test_a_root_written_by_hf_lvf(tmp_path, params):
    root = hf_root(tmp_path / "root")
    described = describe(root, **params)
    meta = _metadata(root)
    _check_counts(described, meta, **params)
    assert described["windows"] == len(VideoWindows(root, **params))
    assert described["window_params"] == {
        "window_length": 1,
        "frame_skip": 0,
        "hop_size": 1,
        "min_video_frames": None,
        **params,
    }
    assert described["fields"] == {
        "label": {
            "dtype": "int64",
            "values": [
                {"value": 0, "videos": 2},
                {"value": 1, "videos": 1},
                {"value": 2, "videos": 1},
            ],
            "distinct": 3,
            "placeholder": -1,
        },
        "split": {
            "dtype": "string",
            "values": [{"value": "train", "videos": 2}, {"value": "val", "videos": 2}],
            "distinct": 2,
            "placeholder": "",
        },
    }
    data = _files_bytes(root, "data")
    assert described["bytes"] == {
        "per_frame_mean": data / described["frames"],
        "data": data,
        "on_disk": _files_bytes(root),
    }
    assert described["encoding"] == "webp" and described["quality"] == meta["quality"]
    assert described["lance_version"] == meta["lance_version"]
    assert described["skipped"] == 0
    assert described["fps"] == [] and described["duration"] is None
    assert described["problems"] == []
    assert described["root"] == str(root)


def test_a_root_written_by_another_tool(tmp_path):
    videos = foreign_videos((10, 2, 17, 6, 13))
    for i, video in enumerate(videos):
        if i != 1:
            video["fps"] = 25.0 if i % 2 else 12.5  # an entry field, as FORMAT.md allows
    root = write_foreign_root(
        tmp_path / "foreign", videos, top_level_extra={"label_names": list("abcde")}
    )
    described = describe(root, window_length=4, hop_size=3)
    meta = _metadata(root)
    assert "lance_version" not in meta and "encoding" not in meta
    _check_counts(described, meta, window_length=4, hop_size=3)
    assert described["lance_version"] == 1  # the latest: nothing pinned it
    assert described["lance_fragments"] == -(-sum(len(v["frames"]) for v in videos) // 7)
    assert described["encoding"] is None and described["quality"] is None
    assert described["fps"] == [{"fps": 12.5, "videos": 3}, {"fps": 25.0, "videos": 1}]
    seconds = [10 / 12.5, 17 / 12.5, 6 / 25.0, 13 / 12.5]  # videos 0, 2, 3, 4
    assert described["duration"] == {
        "seconds": pytest.approx(sum(seconds)),
        "videos": 4,
        "min_seconds": pytest.approx(min(seconds)),
        "max_seconds": pytest.approx(max(seconds)),
    }
    fields = described["fields"]
    assert fields["action"]["values"] == [
        {"value": "act0", "videos": 3},
        {"value": "act1", "videos": 2},
    ]
    assert fields["score"] == {
        "dtype": "float64",
        "missing": 0,
        "min": 0.0,
        "mean": pytest.approx(sum(i / 4 for i in range(5)) / 5),
        "max": 1.0,
    }
    assert fields["label"]["values"] == [
        {"value": i, "videos": 1, "name": "abcde"[i]} for i in range(5)
    ]
    assert fields["label"]["label_names"] == list("abcde")
    assert described["problems"] == []


def test_a_converted_root_with_classes_and_fps(tmp_path):
    videos = tmp_path / "videos"
    for i, name in enumerate(("cat/a.mp4", "cat/b.mp4", "dog/c.mp4")):
        write_video(videos / name, 10 + 5 * i, (32, 48), fps=10, seed=i)
    root = tmp_path / "root"
    hf_lvf.convert.convert_videos(videos, root, fps=5, workers=0, progress=False)
    described = describe(root, window_length=2)
    _check_counts(described, _metadata(root), window_length=2)
    assert described["fields"]["label"]["values"] == [
        {"value": 0, "videos": 2, "name": "cat"},
        {"value": 1, "videos": 1, "name": "dog"},
    ]
    assert described["fps"] == [{"fps": 5.0, "videos": 3}]
    assert described["duration"]["seconds"] == pytest.approx(described["frames"] / 5.0)
    text = format_description(described)
    assert "field label        int64, 0 (cat): 2 videos, 1 (dog): 1 video" in text
    assert "fps                5: 3 videos" in text


def test_problems_are_listed_not_raised(tmp_path):
    # Two sizes among the videos that yield windows: a read needs frame_size.
    root = hf_root(tmp_path / "mixed", lengths=(6, 6))
    hf_lvf.write.write_frames(
        root, [("big", iter(np.zeros((6, 40, 40, 3), np.uint8)), None)], mode="append"
    )
    described = describe(root, window_length=2)
    assert described["frame_sizes"] == [
        {"height": FRAME_SIZE[0], "width": FRAME_SIZE[1], "videos": 2, "frames": 12},
        {"height": 40, "width": 40, "videos": 1, "frames": 6},
    ]
    [problem] = described["problems"]
    assert "differ in size (32x48, 40x40, HxW)" in problem and "frame_size=" in problem
    with pytest.raises(ValueError, match="differ in size"):
        VideoWindows(root, window_length=2)

    # No window for these parameters.
    described = describe(root, window_length=7)
    assert described["windows"] == 0
    assert described["problems"] == [
        "no window: every video has fewer than max(span=7, min_video_frames=None) frames "
        "(longest: 6); VideoWindows and load_dataset would refuse the root"
    ]

    # A Lance table that does not match the video table (the check of the first read).
    meta = _metadata(root)
    meta["videos"][-1]["T"] += 5
    (root / "_metadata.json").write_text(json.dumps(meta))
    described = describe(root)
    assert described["frames"] == 23
    # What the metadata names, since the table cannot be opened.
    assert described["lance_version"] == meta["lance_version"] == 2
    assert described["lance_fragments"] is None and described["bytes"]["data"] is None
    assert any(
        "the Lance table cannot be read" in p and "past the Lance table's 18 rows" in p
        for p in described["problems"]
    )


def test_no_frame_is_read(tmp_path):
    # Every stored frame is garbage: a read fails, a description does not notice.
    videos = foreign_videos((5, 4))
    blobs = {(v, f): b"not a webp image" for v in range(2) for f in range(5)}
    root = write_foreign_root(tmp_path / "garbage", videos, blobs=blobs)
    described = describe(root, window_length=2)
    assert described["windows"] == 4 + 3 and described["problems"] == []
    with pytest.raises(hf_lvf.FrameDecodeError):
        VideoWindows(root, window_length=2)[0]


def test_arguments_are_checked(tmp_path):
    root = hf_root(tmp_path / "root")
    with pytest.raises(ValueError, match=r"window_length must be >= 1, got 0"):
        describe(root, window_length=0)
    with pytest.raises(ValueError, match=r"revision= and token= apply to hf:// roots only"):
        describe(root, revision="main")
    with pytest.raises(RootNotFoundError, match="is not a lance-video-frames root"):
        describe(tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "_metadata.json").write_text("{")
    with pytest.raises(LayoutError, match="is not valid JSON"):
        describe(tmp_path / "bad")


def test_the_table_reads_for_people(tmp_path):
    root = hf_root(tmp_path / "root")
    text = format_description(describe(root, window_length=4))
    lines = dict(line.split("  ", 1) for line in text.splitlines())
    lines = {key.strip(): value.strip() for key, value in lines.items()}
    assert lines["videos"] == "4"
    assert lines["frames"] == "44 (3 to 20 a video, mean 11.0)"
    assert lines["frame sizes (HxW)"] == "32x48: 4 videos"
    assert lines["windows"] == "32 (window_length=4, frame_skip=0, hop_size=1; from 3 videos)"
    assert lines["field split"] == "string, 'train': 2 videos, 'val': 2 videos"
    assert lines["problems"] == "none"
    assert lines["fps"] == "not recorded"


@pytest.mark.hub
def test_a_hub_root_is_described_from_its_metadata_and_manifest(tmp_path, hub: HubServer):
    local = hf_root(tmp_path / "root")
    files = {
        f"clips/{p.relative_to(local).as_posix()}": p.read_bytes()
        for p in local.rglob("*")
        if p.is_file()
    }
    hub.create_repo("org/described")
    sha = hub.commit("org/described", files)
    hub.clear_requests()
    described = describe("hf://datasets/org/described/clips", revision="main", window_length=4)
    want = describe(local, window_length=4)
    assert hub.count("/data/") == 0  # no frame was read: metadata, manifest, file list
    assert described["revision"] == sha
    assert described["root"] == "hf://datasets/org/described/clips"
    for key in ("videos", "frames", "frame_sizes", "windows", "fields", "lance_version", "bytes"):
        assert described[key] == want[key], key
    with pytest.raises(hf_lvf.errors.HubError):
        describe("hf://datasets/org/missing", window_length=4)
