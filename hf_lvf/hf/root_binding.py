"""A window reference names its root, and only reads that root as it was when referenced.

A map-style row stores no pixels, only what identifies its window (see
:class:`hf_lvf.WindowVideo`): ``{"root", "root_id", "lance_version", "video_idx",
"start_frame"}``. ``root`` is the root's URI; ``root_id`` a 63-bit digest of what
identifies its ``_metadata.json`` (:func:`hf_lvf.location.root_file_identity`: a digest
of the bytes of a local file; the commit of an ``hf://`` root) and of the Lance version
that file describes, ``lance_version`` (0: none named, the latest is read). Nothing of
where the bytes sit (device, inode, change time) is in it: a root copied with ``cp -a``,
``rsync -a`` or tar, restored from a backup, or mounted at the same path on another
machine is the same root, and references into it read there.

Because each row names its own root, features of datasets over different roots are
equal, and ``cast``, ``concatenate_datasets`` or ``interleave_datasets`` can never make a
row read another root's frames. A root is checked when a dataset first reads it (one
``stat`` and a lookup of the digest of that state, not one per row; one that only grew by
appends is accepted, its earlier videos unchanged): one that is gone, moved, rewritten
(even at the same size and modification time) or replaced since raises a
:class:`~hf_lvf.errors.LayoutError` that names it, says what changed and how to re-open it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import LayoutError, ParameterError, ParameterTypeError, RootNotFoundError
from ..frames import pinned_version, referenced_data_files, version_row_count
from ..layout import RootLayout, read_layout
from ..location import METADATA_FILENAME, legacy_file_identity, root_file_identity
from ..plan import Crop, FrameSizing, WindowParams
from ..read.windows import VideoWindows

REFERENCE_FIELDS = ("root", "root_id", "lance_version", "video_idx", "start_frame")
REFERENCE_TYPE = pa.struct(
    [
        ("root", pa.string()),
        ("root_id", pa.int64()),
        ("lance_version", pa.int32()),
        ("video_idx", pa.int32()),
        ("start_frame", pa.int32()),
    ]
)
REOPEN_HINT = (
    "open it again with load_dataset (download_mode='force_redownload' if it keeps finding "
    "this cache); a saved dataset whose root was moved or copied unchanged elsewhere is "
    "re-pointed with hf_lvf.write.relocate_roots(ds, {old: new})"
)


@dataclass(frozen=True)
class RootStamp:
    """What the references into one root record of it.

    Attributes:
        uri: the root, as references name it.
        root_id: digest of its ``_metadata.json``'s identity and of ``lance_version``.
        lance_version: the Lance version its ``_metadata.json`` names (0: none).
    """

    uri: str
    root_id: int
    lance_version: int

    def reference(self, video_idx: int, start_frame: int) -> dict[str, Any]:
        """The reference to window ``(video_idx, start_frame)`` of this root."""
        return {
            "root": self.uri,
            "root_id": self.root_id,
            "lance_version": self.lance_version,
            "video_idx": int(video_idx),
            "start_frame": int(start_frame),
        }

    def references(self, video_idx: np.ndarray, start_frame: np.ndarray) -> pa.StructArray:
        """The references to many windows of this root, as one Arrow column."""
        n = len(video_idx)
        columns = [
            pa.repeat(pa.scalar(self.uri, pa.string()), n),
            pa.array(np.full(n, self.root_id, np.int64)),
            pa.array(np.full(n, self.lance_version, np.int32)),
            pa.array(np.asarray(video_idx, np.int32)),
            pa.array(np.asarray(start_frame, np.int32)),
        ]
        return pa.StructArray.from_arrays(columns, fields=list(REFERENCE_TYPE))


def stamp_of(layout: RootLayout) -> RootStamp:
    """What references into ``layout``'s root record: the identity of its ``_metadata.json``
    where it is read now (``layout.uri``, a local copy of a Hub root included)."""
    identity = layout.source.identity
    if layout.source.uri != layout.uri:  # a copy: what a later check at layout.uri sees
        identity = root_file_identity(layout.uri, METADATA_FILENAME) or identity
    version = pinned_version(layout) or 0
    return RootStamp(layout.uri, _root_id(identity, version), version)


def _root_id(identity: str, version: int) -> int:
    digest = hashlib.blake2b(f"{identity}\0{version}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _recorded_by_older_hf_lvf(layout: RootLayout, stamp: RootStamp, now: RootStamp) -> bool:
    """Whether ``stamp`` is what an hf_lvf that identified local files by their inode and
    times recorded of this very file, unchanged since (the same machine, no copy)."""
    legacy = legacy_file_identity(layout.uri)
    return legacy is not None and _root_id(legacy, now.lance_version) == stamp.root_id


def parse_reference(value: Mapping[str, Any]) -> tuple[RootStamp, int, int]:
    """``(stamp, video_idx, start_frame)`` of a reference dict.

    Raises:
        LayoutError: a reference written by hf_lvf before references named their roots.
        TypeError: ``value`` lacks a field.
    """
    if not isinstance(value.get("root"), str) or value.get("root_id") is None:
        if isinstance(value.get("root"), int):
            raise LayoutError(
                f"reference {dict(value)!r} was stored by an older hf_lvf (a root index, no root "
                f"identity), which cannot tell which root it points into; {REOPEN_HINT}"
            )
        raise ParameterTypeError(
            f"a WindowVideo reference needs the keys {REFERENCE_FIELDS}, got {value!r}"
        )
    stamp = RootStamp(str(value["root"]), int(value["root_id"]), int(value["lance_version"]))
    return stamp, int(value["video_idx"]), int(value["start_frame"])


def bound_layout(stamp: RootStamp) -> RootLayout:
    """The layout of ``stamp.uri`` if it is still the root the references were made from.

    Raises:
        LayoutError: the root is gone, or it changed (rewritten, replaced or moved there):
            names it, what changed, and how to re-open it. A root that only grew by appends
            since is still the same root for the videos the references name.
    """
    try:
        layout = read_layout(stamp.uri)
    except RootNotFoundError as err:
        raise LayoutError(
            f"root {stamp.uri!r}, which these references read, is gone (no {METADATA_FILENAME}: "
            f"moved or deleted); {REOPEN_HINT}"
        ) from err
    now = stamp_of(layout)
    same = now.root_id == stamp.root_id or _recorded_by_older_hf_lvf(layout, stamp, now)
    if not same and not _grown_by_appends(layout, stamp, now):
        if now.lance_version != stamp.lance_version:
            what = (
                f"its Lance table is at version {now.lance_version or 'latest'} now, the "
                f"references were made at version {stamp.lance_version or 'latest'}"
            )
        else:
            what = (
                f"its {METADATA_FILENAME} does not hold what it held when the references were "
                f"made (the root was rewritten or replaced since)"
            )
        raise LayoutError(
            f"root {stamp.uri!r} changed since these references were made: {what}, "
            f"so they may name other frames; {REOPEN_HINT}"
        )
    return layout


def _grown_by_appends(layout: RootLayout, stamp: RootStamp, now: RootStamp) -> bool:
    """Whether the root only grew by appends since version ``stamp.lance_version``: every
    data file of that version is still in the current one, and its rows end where a video
    of today's layout ends. The videos referenced then are unchanged (an append only adds
    videos after them, see :mod:`hf_lvf.write.append`), so their references stay valid."""
    if not 0 < stamp.lance_version < now.lance_version:
        return False
    try:
        then = referenced_data_files(layout.uri, stamp.lance_version)
        rows_then = version_row_count(layout.uri, stamp.lance_version)
    except (LayoutError, OSError, ValueError, RuntimeError):  # that version is gone
        return False
    if not then or not then <= referenced_data_files(layout.uri, now.lance_version):
        return False
    ends = layout.start_rows + layout.num_frames
    return bool(np.any(ends == rows_then))


# --- per-process views: one decoding view per (root as checked, params, size) ---

# Views kept per process by the front ends (see process_view), with the pid that made them.
_process_views: dict[tuple, VideoWindows] = {}
_process_views_pid: int | None = None


def process_view(key: tuple, make: Callable[[], VideoWindows]) -> VideoWindows:
    """The view stored under ``key`` in this process, made by ``make()`` on first use.

    Front ends that decode row by row keep one view per root and parameters, so the
    Lance handle and the frame cache carry over between rows. Views inherited through
    a fork are dropped, never reused: their handles belong to the parent.
    """
    global _process_views_pid
    if _process_views_pid != os.getpid():
        _process_views.clear()
        _process_views_pid = os.getpid()
    view = _process_views.get(key)
    if view is None:
        view = _process_views[key] = make()
    return view


def decoder(
    layout: RootLayout,
    params: WindowParams,
    size: tuple[int, int, Crop, int, bool | str],
    stream: str | None = None,
) -> VideoWindows:
    """The view that decodes references into ``layout``'s root in this process (opened
    lazily), at ``size``: ``(H, W, crop, max_frame_pixels, proxies)``; with ``stream``, the
    view reads that image stream too (:meth:`~hf_lvf.VideoWindows.read_stream`), else none."""
    # hop 1 makes every start frame a window, so (video_idx, start_frame) maps to an index
    # whatever hop_size and min_video_frames the references were made with.
    hop1 = WindowParams(
        window_length=params.window_length,
        frame_skip=params.frame_skip,
        short_videos=params.short_videos,
        fps=params.fps,
    )
    sizing = FrameSizing(
        frame_size=tuple(size[:2]), crop=size[2], max_frame_pixels=size[3], proxies=size[4]
    )
    key = ("decode", layout.uri, layout.source.identity, hop1, tuple(size), stream)
    streams = [] if stream is None else [stream]
    return process_view(
        key, lambda: VideoWindows.from_layout(layout, hop1, sizing=sizing, streams=streams)
    )


def window_index(view: VideoWindows, video_idx: int, start_frame: int) -> int:
    """The index in ``view`` (hop 1) of the window starting at ``start_frame`` of a video.

    Raises:
        ValueError: there is no such window in the root.
    """
    plan = view.plan
    if not 0 <= video_idx < len(plan.windows_per_video) or not (
        0 <= start_frame < int(plan.windows_per_video[video_idx])
    ):
        raise ParameterError(
            f"reference (video_idx={video_idx}, start_frame={start_frame}) is not a window of "
            f"root {view.uri!r} with window_length={view.params.window_length}, "
            f"frame_skip={view.params.frame_skip}"
        )
    return int(plan.first_window[video_idx]) + start_frame


__all__ = [
    "REFERENCE_FIELDS",
    "REFERENCE_TYPE",
    "RootStamp",
    "bound_layout",
    "decoder",
    "parse_reference",
    "process_view",
    "stamp_of",
    "window_index",
]
