"""What to say when a path holds video files instead of a root: how many, and the call that
converts them into one (``hf-lvf convert`` / ``hf_lvf.convert.convert_videos``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

#: File name endings taken as video files (by the hints here and by ``convert_videos``).
VIDEO_EXTENSIONS = (".avi", ".m4v", ".mkv", ".mov", ".mp4", ".mpeg", ".mpg", ".webm")
# Entries looked at, at most, to count the video files of a folder: a hint must stay quick
# on a folder of a million files (or on a slow network filesystem).
_MAX_ENTRIES = 10_000


def is_video_file(name: str | os.PathLike[str]) -> bool:
    return str(name).lower().endswith(VIDEO_EXTENSIONS)


def count_video_files(folder: str | os.PathLike[str]) -> tuple[int, bool]:
    """``(video files, whether all were counted)`` in ``folder`` and its sub-folders one level
    down (``convert_videos``' class folders), from one scan of at most ``_MAX_ENTRIES``
    entries; hidden entries are skipped."""
    count, seen = 0, 0
    pending = [(Path(folder), 0)]
    while pending:
        current, depth = pending.pop()
        try:
            entries = os.scandir(current)
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > _MAX_ENTRIES:
                    return count, False
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir():
                        if depth == 0:
                            pending.append((Path(entry.path), 1))
                    elif is_video_file(entry.name):
                        count += 1
                except OSError:
                    continue
    return count, True


def convert_call(source: str | os.PathLike[str]) -> str:
    """The two ways to convert the videos at ``source`` into a root beside it."""
    source = os.fspath(source).rstrip("/\\") or os.fspath(source)
    path = Path(source)
    name = path.stem if is_video_file(source) else path.name
    dest = str(path.with_name(name + "_lvf")) if name else "videos_lvf"
    return (
        f"`hf-lvf convert {shlex.quote(source)} {shlex.quote(dest)}` or "
        f"`hf_lvf.convert.convert_videos({source!r}, {dest!r})`, then read {dest!r}"
    )


def videos_hint(path: str | os.PathLike[str]) -> str:
    """A sentence for the error about ``path`` not being a root when it is a video file or a
    local folder that holds video files, else ``""``."""
    text = os.fspath(path)
    if "://" in text:
        return ""
    local = Path(text).expanduser()
    if local.is_file() and is_video_file(local.name):
        return f" {text!r} is a video file: convert it into a root first, with {convert_call(text)}"
    if not local.is_dir():
        return ""
    count, complete = count_video_files(local)
    if not count:
        return ""
    return (
        f" The folder holds {_video_files(count, complete)}: convert them into a root first, "
        f"with {convert_call(text)}"
    )


def _video_files(count: int, complete: bool = True) -> str:
    if not complete:
        return f"{count}+ video files"
    return f"{count} video file{'s' if count != 1 else ''}"


def video_files_hint(files: Sequence[str]) -> str:
    """The hint for ``data_files`` that resolved to video files: how many, and the call that
    converts the folder they share."""
    videos = [str(f) for f in files if is_video_file(str(f)) and "://" not in str(f)]
    if not videos:
        return ""
    try:
        folder = os.path.commonpath([os.path.dirname(v) or "." for v in videos])
    except ValueError:  # relative and absolute paths mixed
        folder = os.path.dirname(videos[0]) or "."
    return (
        f"; they include {_video_files(len(videos))}: convert the videos into a root first, "
        f"with {convert_call(folder)}"
    )
