"""merge_roots and ``hf-lvf merge``: one root from several, frames copied byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lance
import pytest
from _roots import hf_root, make_frames
from _videos import write_video

from hf_lvf import VideoWindows
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos
from hf_lvf.errors import SkippedVideoWarning
from hf_lvf.write import merge_roots, write_frames


def _root(path: Path, name: str, lengths, size=(32, 48)) -> Path:
    videos = [
        (f"{name}_{i}", make_frames(n, *size, seed=sum(map(ord, name)) + i), {"label": i})
        for i, n in enumerate(lengths)
    ]
    return write_frames(path, videos)


def _table(root: Path):
    meta = json.loads((root / "_metadata.json").read_text())
    return lance.dataset(str(root), version=meta["lance_version"]).to_table(), meta


def test_merge_equals_converting_both_inputs_at_once(tmp_path):
    files = [
        write_video(tmp_path / "clips" / f"v_{i}.mp4", 6 + i, (32, 48), seed=i) for i in range(5)
    ]
    convert_videos(files[:3], tmp_path / "a", workers=0, progress=False)
    convert_videos(files[3:], tmp_path / "b", workers=0, progress=False)
    convert_videos(files, tmp_path / "both", workers=0, progress=False)
    merged = merge_roots([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")

    got, meta = _table(merged)
    want, want_meta = _table(tmp_path / "both")
    assert got.equals(want)  # ids, frame numbers, and the very WebP bytes
    a, b = _table(tmp_path / "a")[0], _table(tmp_path / "b")[0]
    assert (
        got.column("bytes").to_pylist()
        == a.column("bytes").to_pylist() + b.column("bytes").to_pylist()
    )  # copied, never re-encoded
    assert meta["videos"] == want_meta["videos"]
    for name in ("quality", "resize", "num_rows", "n_videos", "layout"):
        assert meta[name] == want_meta[name], name
    assert [m["uri"] for m in meta["lineage"]["merged_from"]] == [
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]
    windows = [s["video"].tobytes() for s in VideoWindows(merged, window_length=3)]
    assert windows == [
        s["video"].tobytes() for s in VideoWindows(tmp_path / "both", window_length=3)
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "both", "clips", "merged"]


def test_merge_frames_of_different_sizes_and_a_skipped_duplicate(tmp_path):
    a = _root(tmp_path / "a", "a", (4, 5))
    b = _root(tmp_path / "b", "b", (6,), size=(20, 24))
    merged = merge_roots([a, b], tmp_path / "m", overwrite=False)
    got, meta = _table(merged)
    assert [(v["id"], v["H"], v["W"], v["start_row"]) for v in meta["videos"]] == [
        (0, 32, 48, 0),
        (1, 32, 48, 4),
        (2, 20, 24, 9),
    ]
    assert got.column("video_id").to_pylist() == [0] * 4 + [1] * 5 + [2] * 6
    assert got.column("frame_idx").to_pylist() == [*range(4), *range(5), *range(6)]
    assert got.column("bytes").to_pylist() == (
        _table(a)[0].column("bytes").to_pylist() + _table(b)[0].column("bytes").to_pylist()
    )
    w = VideoWindows(merged, window_length=6)  # only video 2 is long enough: one size
    assert w[0]["video"].tobytes() == VideoWindows(b, window_length=6)[0]["video"].tobytes()

    files = [write_video(tmp_path / f"c{i}.mp4", 6, (16, 16), seed=i) for i in range(2)]
    convert_videos(files, tmp_path / "c", workers=0, progress=False)
    convert_videos(
        shutil.copy(files[1], tmp_path / "d1.mp4"), tmp_path / "d", workers=0, progress=False
    )
    with pytest.warns(SkippedVideoWarning, match=r"skipped video .*d1.mp4.* already merged as"):
        merged = merge_roots([tmp_path / "c", tmp_path / "d"], tmp_path / "cd")
    assert len(_table(merged)[1]["videos"]) == 2


def test_merge_errors(tmp_path):
    a = hf_root(tmp_path / "a", (4, 5))
    b = hf_root(tmp_path / "b", (6,))  # clip_0 again
    with pytest.raises(ValueError, match=r"video key 'clip_0' is in root .* and in root"):
        merge_roots([a, b], tmp_path / "m")
    with pytest.raises(ValueError, match=r"is also one of the roots"):
        merge_roots([a, b], a, overwrite=True)
    with pytest.raises(ValueError, match=r"roots must be a non-empty list"):
        merge_roots([], tmp_path / "m")
    with pytest.raises(FileExistsError, match=r"already exists"):
        merge_roots([a], b)
    assert not (tmp_path / "m").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_cli_merge(tmp_path, capsys):
    a = _root(tmp_path / "a", "a", (4, 5))
    b = _root(tmp_path / "b", "b", (3,))
    assert cli_main(["merge", str(a), str(b), str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "videos  3" in out and "frames  12" in out
    assert cli_main(["merge", str(a), str(tmp_path / "m")]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.hub
def test_appended_root_on_the_hub_reads_and_merges(hub, tmp_path):
    from hf_lvf import push_to_hub

    a = _root(tmp_path / "a", "a", (4, 5))
    write_frames(a, [("a_2", make_frames(6, 32, 48, seed=9), {"label": 2})], mode="append")
    assert _table(a)[1]["lance_version"] == 2
    push_to_hub(a, "org/grown", token=hub.token)
    remote = VideoWindows("hf://datasets/org/grown", window_length=2)
    local = VideoWindows(a, window_length=2)
    assert [s["video"].tobytes() for s in remote] == [s["video"].tobytes() for s in local]

    b = _root(tmp_path / "b", "b", (3,))
    merged = merge_roots(["hf://datasets/org/grown", b], tmp_path / "m")
    want = merge_roots([a, b], tmp_path / "want")
    assert _table(merged)[0].equals(_table(want)[0])
    assert _table(merged)[1]["videos"] == _table(want)[1]["videos"]
