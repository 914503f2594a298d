"""Hints where people go wrong: a folder of video files where a root is expected, and an empty
``data_dir``/``data_files`` (never the working directory)."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import pytest
from _roots import hf_root
from _videos import write_video

import hf_lvf
from hf_lvf import RootNotFoundError, VideoWindows
from hf_lvf.hf.builder import HfLvf
from hf_lvf.location import count_video_files
from hf_lvf.location import hints as hints_module

CALL = re.compile(r"`hf_lvf\.convert\.convert_videos\('([^']+)', '([^']+)'\)`")


@pytest.fixture(scope="module")
def mp4s(tmp_path_factory) -> Path:
    """A videofolder: two clips at the top, one in a class folder, and a file that is not one."""
    folder = tmp_path_factory.mktemp("hints") / "my_mp4s"
    write_video(folder / "a.mp4", 6, seed=1)
    write_video(folder / "b.mov", 6, seed=2)
    (folder / "b.mov").rename(folder / "b.MOV")  # endings are matched in any case
    write_video(folder / "cat" / "c.mp4", 6, seed=3)
    (folder / "notes.txt").write_text("not a video")
    return folder


def test_a_view_of_a_folder_of_videos_says_how_to_convert_them(mp4s, tmp_path):
    with pytest.raises(RootNotFoundError) as info:
        VideoWindows(mp4s)
    message = str(info.value)
    assert f"{str(mp4s)!r} is not a lance-video-frames root" in message
    assert "The folder holds 3 video files: convert them into a root first" in message
    dest = f"{mp4s}_lvf"
    assert f"`hf-lvf convert {mp4s} {dest}`" in message
    assert f"`hf_lvf.convert.convert_videos({str(mp4s)!r}, {dest!r})`" in message
    # The call it names works, and gives a root that reads.
    source, target = CALL.search(message).groups()
    assert (source, target) == (str(mp4s), dest)
    summary = hf_lvf.convert.convert_videos(source, target, workers=0, progress=False)
    assert summary.num_videos == 3
    assert len(VideoWindows(target, window_length=2)) == 3 * 5


def test_a_view_of_a_video_file_says_how_to_convert_it(mp4s):
    with pytest.raises(RootNotFoundError, match=r"is a video file: convert it into a root first"):
        VideoWindows(mp4s / "a.mp4")
    with pytest.raises(RootNotFoundError) as info:
        VideoWindows(mp4s / "a.mp4")
    assert f"`hf-lvf convert {mp4s / 'a.mp4'} {mp4s / 'a_lvf'}`" in str(info.value)


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_load_dataset_of_a_folder_of_videos_says_how_to_convert_them(mp4s, streaming):
    with pytest.raises(RootNotFoundError) as info:
        datasets.load_dataset("hf_lvf", data_dir=str(mp4s), streaming=streaming)
    message = str(info.value)
    assert f"data_dir {str(mp4s)!r} is not a lance-video-frames root" in message
    assert "The folder holds 3 video files" in message
    assert f"hf_lvf.convert.convert_videos({str(mp4s)!r}, '{mp4s}_lvf')" in message
    with pytest.raises(RootNotFoundError, match=r"data_files entry .* holds 3 video files"):
        datasets.load_dataset("hf_lvf", data_files={"train": str(mp4s)}, streaming=streaming)
    with pytest.raises(RootNotFoundError) as info:
        datasets.load_dataset("hf_lvf", data_files=str(mp4s / "*.mp4"), streaming=streaming)
    message = str(info.value)
    assert "hold no _metadata.json" in message and "they include 1 video file" in message
    assert f"`hf-lvf convert {mp4s} {mp4s}_lvf`" in message


def test_no_hint_without_videos(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "x.txt").write_text("x")
    with pytest.raises(RootNotFoundError) as info:
        VideoWindows(tmp_path / "empty")
    folder = str(tmp_path / "empty")
    assert str(info.value) == (
        f"{folder!r} is not a lance-video-frames root: no _metadata.json at "
        f"{folder + '/_metadata.json'!r}."
    )


def test_counting_is_one_bounded_scan(tmp_path, monkeypatch):
    folder = tmp_path / "many"
    (folder / "deep" / "deeper").mkdir(parents=True)
    for i in range(5):
        (folder / f"v{i}.mp4").write_bytes(b"")
    (folder / "deep" / "v.webm").write_bytes(b"")
    (folder / "deep" / "deeper" / "too_deep.mp4").write_bytes(b"")  # below class folders
    (folder / ".hidden.mp4").write_bytes(b"")
    assert count_video_files(folder) == (6, True)
    monkeypatch.setattr(hints_module, "_MAX_ENTRIES", 3)
    count, complete = count_video_files(folder)
    assert count <= 3 and not complete
    with pytest.raises(RootNotFoundError, match=r"The folder holds \d\+ video files"):
        VideoWindows(folder)


# --- empty data_dir / data_files: never the working directory --------------------------------


@pytest.fixture
def root_in_cwd(tmp_path, monkeypatch) -> Path:
    """A working directory that holds a root: what a glob of it would find."""
    hf_root(tmp_path / "train")
    monkeypatch.chdir(tmp_path)
    return tmp_path


MISSING = r"load_dataset\('hf_lvf'\) needs data_dir= .* or data_files="


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_empty_data_dir_is_the_missing_data_dir_error(root_in_cwd, streaming):
    with pytest.raises(ValueError, match=MISSING):
        datasets.load_dataset("hf_lvf", data_dir="", window_length=2, streaming=streaming)
    with pytest.raises(ValueError, match=MISSING):
        datasets.load_dataset("hf_lvf", window_length=2, streaming=streaming)


@pytest.mark.parametrize("streaming", [False, True], ids=["map", "streaming"])
def test_empty_data_files_are_an_error(root_in_cwd, streaming):
    # datasets refuses an empty data_files itself, before hf_lvf sees it.
    for empty in ("", [], {}):
        with pytest.raises(ValueError, match=r"Empty 'data_files'"):
            datasets.load_dataset("hf_lvf", data_files=empty, streaming=streaming)
    with pytest.raises(ValueError, match=MISSING):
        datasets.load_dataset("hf_lvf", data_dir="", data_files=None, streaming=streaming)
    for empty in ({"train": ""}, {"train": ["train", ""]}, [""]):
        with pytest.raises(ValueError, match=r"data_files holds an empty path ''"):
            datasets.load_dataset("hf_lvf", data_files=empty, streaming=streaming)


def test_an_empty_data_dir_beside_data_files_is_ignored(root_in_cwd):
    ds = datasets.load_dataset("hf_lvf", data_dir="", data_files="train", split="train")
    assert len(ds) == len(VideoWindows(root_in_cwd / "train"))


def test_a_builder_made_with_an_empty_data_dir_is_the_missing_data_dir_error(root_in_cwd):
    with pytest.raises(ValueError, match=MISSING):
        HfLvf(data_dir="", window_length=2)  # its features need the roots
