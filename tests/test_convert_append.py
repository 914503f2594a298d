"""convert_videos(mode="append") and ``hf-lvf convert --append``: real video files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lance
import pytest
from _videos import write_video

from hf_lvf import VideoWindows
from hf_lvf.cli import main as cli_main
from hf_lvf.convert import convert_videos
from hf_lvf.errors import SkippedVideoWarning


def clips(folder: Path, count: int = 9) -> list[Path]:
    """``v_0.mp4`` .. : short clips of different lengths and content."""
    return [write_video(folder / f"v_{i}.mp4", 6 + i % 3, (32, 48), seed=i) for i in range(count)]


def table(root: Path):
    meta = json.loads((root / "_metadata.json").read_text())
    return lance.dataset(str(root), version=meta["lance_version"]).to_table(), meta


def test_append_equals_converting_everything_at_once(tmp_path):
    files = clips(tmp_path / "clips")
    root = tmp_path / "root"
    convert_videos(files[:6], root, workers=0, progress=False)
    old_table, _ = table(root)
    summary = convert_videos(files[6:], root, mode="append", workers=0, progress=False)
    assert (summary.num_videos, summary.skipped) == (3, ())
    assert summary.num_frames == sum(6 + i % 3 for i in range(6, 9))
    convert_videos(files, tmp_path / "fresh", workers=0, progress=False)

    got, meta = table(root)
    want, fresh_meta = table(tmp_path / "fresh")
    assert got.slice(0, len(old_table)).equals(old_table)  # the old rows, byte for byte
    assert got.equals(want)  # ids, frame numbers and WebP bytes of a fresh conversion
    assert meta["videos"] == fresh_meta["videos"]
    assert [v["id"] for v in meta["videos"]] == list(range(9))
    assert meta["lineage"]["appends"][0]["converter"] == "hf_lvf.convert.convert_videos"
    w = VideoWindows(root, window_length=4, hop_size=2)
    assert len(w) == len(VideoWindows(tmp_path / "fresh", window_length=4, hop_size=2))


def test_append_skips_files_already_in_the_root(tmp_path):
    files = clips(tmp_path / "clips", 4)
    root = tmp_path / "root"
    convert_videos(files[:2], root, workers=0, progress=False)
    copy = shutil.copy(files[1], tmp_path / "clips" / "renamed.mp4")
    with pytest.warns(SkippedVideoWarning) as caught:
        summary = convert_videos(
            [files[0], copy, files[2], files[3]], root, mode="append", workers=0, progress=False
        )
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "already in the root as" in messages[0] and "v_1.mp4" in messages[0]
    assert sorted(s.path for s in summary.skipped) == [Path(copy).as_posix(), files[0].as_posix()]
    assert summary.num_videos == 2
    meta = json.loads((root / "_metadata.json").read_text())
    assert [Path(v["path"]).name for v in meta["videos"]] == [
        "v_0.mp4",
        "v_1.mp4",
        "v_2.mp4",
        "v_3.mp4",
    ]
    assert meta["n_skipped"] == 0  # duplicates are not unreadable inputs
    # Nothing new at all: no commit.
    with pytest.warns(SkippedVideoWarning):
        summary = convert_videos(files[:1], root, mode="append", workers=0, progress=False)
    assert summary.num_videos == 0
    assert lance.dataset(str(root)).version == 2


def test_append_refuses_other_settings(tmp_path):
    files = clips(tmp_path / "clips", 3)
    root = tmp_path / "root"
    convert_videos(files[:1], root, workers=0, progress=False, resize=16)
    for kwargs, message in [
        ({"resize": 16, "quality": 70}, r"quality=70 differs from the root's quality 90"),
        ({}, r"resize=None differs from the root's resize 16"),
        ({"resize": 16, "fps": 5}, r"fps=5.0 differs from the root's fps None"),
        ({"resize": 16, "crop": "center"}, r"crop='center' differs from the root's crop 'none'"),
    ]:
        with pytest.raises(ValueError, match=message):
            convert_videos(files[1:], root, mode="append", workers=0, progress=False, **kwargs)
    write_video(files[0], 9, (32, 48), seed=99)  # another video under a recorded path
    with pytest.raises(ValueError, match=r"already holds a different video with key"):
        convert_videos(files[0], root, mode="append", workers=0, progress=False, resize=16)
    assert lance.dataset(str(root)).version == 1


def test_cli_append(tmp_path, capsys):
    files = clips(tmp_path / "clips", 3)
    root = tmp_path / "root"
    assert cli_main(["convert", str(files[0]), str(root), "--workers", "0", "--no-progress"]) == 0
    assert cli_main(["convert", str(files[1]), str(root), "--workers", "0", "--no-progress"]) == 2
    assert "--append" in capsys.readouterr().err  # the flag, not mode='append'
    args = ["convert", str(files[1]), str(files[2]), str(root), "--append", "--workers", "0"]
    assert cli_main([*args, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "videos appended  2" in out
    assert len(VideoWindows(root).videos) == 3
    with pytest.raises(SystemExit):
        cli_main([*args, "--overwrite"])


def test_append_a_folder_of_some_of_the_root_classes(tmp_path):
    from _videos import make_labelled_folder

    root = tmp_path / "root"
    convert_videos(
        make_labelled_folder(tmp_path / "week1", metadata=False), root, workers=0, progress=False
    )
    week2 = tmp_path / "week2"
    write_video(week2 / "dog" / "new_0.mp4", 7, (32, 48), seed=40)
    summary = convert_videos(week2, root, mode="append", workers=0, progress=False)
    assert summary.num_videos == 1
    meta = json.loads((root / "_metadata.json").read_text())
    assert meta["label_names"] == ["cat", "dog"]
    assert meta["videos"][-1]["path"] == "dog/new_0.mp4"
    assert meta["videos"][-1]["metadata"]["label"] == 1  # "dog" in the root's classes
    write_video(tmp_path / "week3" / "bird" / "b_0.mp4", 7, (32, 48), seed=41)
    with pytest.raises(ValueError, match=r"class folder\(s\) 'bird' are not classes of the root"):
        convert_videos(tmp_path / "week3", root, mode="append", workers=0, progress=False)


def test_failed_append_through_an_executor_leaves_the_root_and_no_marker(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from _videos import truncate

    from hf_lvf.errors import VideoDecodeError

    files = clips(tmp_path / "clips", 5)
    root = tmp_path / "root"
    convert_videos(files[:2], root, workers=0, progress=False)
    before = (root / "_metadata.json").read_bytes(), table(root)[0]
    truncate(files[3])
    with ThreadPoolExecutor(2) as executor, pytest.raises(VideoDecodeError, match=r"v_3.mp4"):
        convert_videos(
            files[2:], root, mode="append", executor=executor, on_error="raise", progress=False
        )
    assert (root / "_metadata.json").read_bytes() == before[0]
    assert table(root)[0].equals(before[1])
    assert sorted(p.name for p in root.iterdir()) == [
        "_metadata.json",
        "_transactions",
        "_versions",
        "data",
    ]
    with ThreadPoolExecutor(2) as executor:  # cancelled workers left nothing that stops these
        summary = convert_videos(
            [files[2], files[4]], root, mode="append", executor=executor, progress=False
        )
    assert summary.num_videos == 2
    ds = lance.dataset(str(root))
    referenced = {f.path for frag in ds.get_fragments() for f in frag.metadata.files}
    assert referenced == {p.name for p in (root / "data").iterdir()}
