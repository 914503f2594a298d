"""LeRobot v3 datasets as sources: each episode a video, each per-frame parquet column a
per-frame field, frames decoded from the camera's MP4 at the episode's ``from_timestamp`` plus
each frame's ``timestamp`` (the frame nearest that time, as LeRobot's decoder picks it).

The layout (LeRobot v3, ``codebase_version`` ``v3.0``): ``meta/info.json`` (``fps``,
``features``, ``data_path`` and ``video_path`` templates), ``meta/episodes/chunk-*/file-*.parquet``
(per episode: ``episode_index``, ``length``, ``tasks``, ``data/chunk_index``,
``data/file_index``, ``videos/<camera>/chunk_index``, ``file_index``, ``from_timestamp``,
``to_timestamp``), ``meta/tasks.parquet``, ``data/chunk-*/file-*.parquet`` (per frame) and
``videos/<camera>/chunk-*/file-*.mp4`` (several episodes a file).

Cameras: one root; the first camera (or the first asked for) is ``bytes`` and
``video_column``, every other one an image stream of its key (FORMAT.md, "Image streams"),
each decoded at its own ``from_timestamp`` plus the frame's ``timestamp``; the per-frame
fields are stored once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputNotFoundError, ParameterError
from .repo_files import RepoFiles
from .source_parts import Clip, FrameTable, _BadClip
from .sources import _Source

logger = logging.getLogger(__name__)

INFO_FILE = "meta/info.json"
STATS_FILE = "meta/stats.json"  # LeRobot's statistics, images' among them
_DEFAULT_DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
_DEFAULT_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"


@dataclass(frozen=True)
class LeRobotImport:
    """What a LeRobot dataset gives the converter for one camera."""

    sources: list[_Source]
    fps: float
    cameras: tuple[str, ...]
    lineage: dict[str, Any]
    #: ``fps``, ``features`` (info.json's), ``stats`` (the fields' from the data files, the
    #: cameras' from ``meta/stats.json``) and ``tasks`` (``[task_index, task]`` pairs), kept in
    #: the root's ``_metadata.json`` under ``lerobot``: what a policy reads of its meta.
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)


def is_lerobot(files: RepoFiles) -> bool:
    return files.exists(INFO_FILE)


def lerobot_cameras(files: RepoFiles) -> tuple[str, ...]:
    """The video features (cameras) of the dataset, in ``info.json`` order."""
    info = _info(files)
    return tuple(k for k, v in info["features"].items() if v.get("dtype") == "video")


def _info(files: RepoFiles) -> dict[str, Any]:
    try:
        info = json.loads(files.local(INFO_FILE).read_text(encoding="utf-8"))
    except ValueError as err:
        raise ParameterError(f"{INFO_FILE} of {files.folder!r} is not JSON: {err}") from err
    if not isinstance(info, dict) or "fps" not in info or "features" not in info:
        raise ParameterError(
            f"{INFO_FILE} of {files.folder!r} has no 'fps' and 'features': not a LeRobot v3 dataset"
        )
    version = str(info.get("codebase_version", "v3.0"))
    if not version.startswith("v3"):
        raise ParameterError(
            f"{files.folder!r} is a LeRobot {version} dataset; only v3 datasets are read "
            "(convert it with LeRobot's v2.1 -> v3.0 script first)"
        )
    return info


def _read_parquet(files: RepoFiles, rel: str, columns: list[str] | None = None) -> pa.Table:
    path = files.local(rel)  # FileNotFoundError / HubError name the file
    try:
        return pq.read_table(path, columns=columns)
    except (OSError, ValueError) as err:
        raise ParameterError(f"cannot read {rel!r} of {files.folder!r}: {err}") from err


def _tasks(files: RepoFiles) -> dict[int, str]:
    """``task_index -> task`` from ``meta/tasks.parquet`` (tasks are its pandas index)."""
    if not files.exists("meta/tasks.parquet"):
        return {}
    table = _read_parquet(files, "meta/tasks.parquet")
    names = [n for n in table.column_names if n != "task_index"]
    if "task_index" not in table.column_names or not names:
        return {}
    column = "task" if "task" in names else names[0]
    return dict(
        zip(table.column("task_index").to_pylist(), table.column(column).to_pylist(), strict=True)
    )


def _values(column: pa.ChunkedArray, name: str) -> Any | None:
    """A per-frame parquet column as ``(n, *shape)`` numpy, or ``None`` if it is no
    supported per-frame type (images, ragged lists: logged)."""
    array = column.combine_chunks()
    kind = array.type
    shape: list[int] = []
    while pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind):
        if pa.types.is_list(kind):  # a list column of one length throughout: a vector
            lengths = np.unique(array.value_lengths().to_numpy(zero_copy_only=False))
            if len(lengths) != 1:
                logger.warning("column %r has lists of several lengths: not imported", name)
                return None
            shape.append(int(lengths[0]))
        else:
            shape.append(kind.list_size)
        array = array.flatten()
        kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return array.to_pylist() if not shape else None
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
        logger.warning("column %r of type %s is not a per-frame field type: skipped", name, kind)
        return None
    values = array.to_numpy(zero_copy_only=False)
    return values.reshape((len(column), *shape))


def lerobot_sources(
    files: RepoFiles, camera: str, *, fps: float | None = None, streams: tuple[str, ...] = ()
) -> LeRobotImport:
    """The episodes of a LeRobot v3 dataset as sources for ``camera`` (``bytes``), with the
    cameras ``streams`` as image streams.

    Raises:
        ValueError: not a v3 dataset, an unknown camera, ``fps`` other than the dataset's, or
            a meta or data file that cannot be read.
        FileNotFoundError: a data parquet file an episode names is missing.
    """
    info = _info(files)
    cameras = tuple(k for k, v in info["features"].items() if v.get("dtype") == "video")
    for name in (camera, *streams):
        if name not in cameras:
            raise ParameterError(
                f"camera {name!r} is not a video feature of LeRobot dataset {files.folder!r} "
                f"(its cameras: {list(cameras)!r})"
            )
    rate = float(info["fps"])
    if fps is not None and float(fps) != rate:
        raise ParameterError(
            f"fps={fps!r} differs from the LeRobot dataset's fps {rate!r}: its episodes are "
            "imported at their own rate (pass fps=None)"
        )
    episode_files = files.glob("meta/episodes/*/*.parquet")
    if not episode_files:
        raise InputNotFoundError(f"LeRobot dataset {files.folder!r} has no meta/episodes/*.parquet")
    has_stats = files.exists(STATS_FILE)
    more = [STATS_FILE] if has_stats else []
    files.prefetch([*episode_files, "meta/tasks.parquet", *more])  # their round trips overlap
    episodes = pa.concat_tables([_read_parquet(files, f) for f in episode_files]).to_pylist()
    episodes.sort(key=lambda e: e["episode_index"])
    tasks = _tasks(files)
    data_path = info.get("data_path", _DEFAULT_DATA_PATH)
    video_path = info.get("video_path", _DEFAULT_VIDEO_PATH)
    by_data_file: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for episode in episodes:
        where = (episode["data/chunk_index"], episode["data/file_index"])
        by_data_file.setdefault(where, []).append(episode)
    videos = [
        video_path.format(
            video_key=name,
            chunk_index=e[f"videos/{name}/chunk_index"],
            file_index=e[f"videos/{name}/file_index"],
        )
        for name in (camera, *streams)
        for e in episodes
    ]
    files.prefetch_behind(list(dict.fromkeys(videos)))  # while the workers start
    files.prefetch([data_path.format(chunk_index=c, file_index=f) for c, f in sorted(by_data_file)])
    sources = []
    stats = _FieldStats()
    for (chunk, file_index), group in sorted(by_data_file.items()):
        rel = data_path.format(chunk_index=chunk, file_index=file_index)
        # What places the frames, and the fields' statistics: the workers read each episode's
        # columns themselves.
        data = _read_parquet(files, rel)
        stats.add(data)
        data = data.select(["episode_index", "frame_index", "timestamp"])
        index = data.column("episode_index").to_numpy()
        for episode in group:
            rows = data.filter(pa.array(index == episode["episode_index"]))
            source = _episode_source(files, episode, rows, camera, video_path, rate, tasks, rel)
            sources.append(_with_cameras(source, files, episode, rows, streams, video_path))
    lineage = files.lineage("lerobot") | {
        "camera": camera,
        **({"cameras": [camera, *streams]} if streams else {}),
        "codebase_version": info.get("codebase_version"),
    }
    field_stats = stats.result()
    camera_stats = _camera_stats(files, (camera, *streams)) if has_stats else {}
    meta = {"fps": rate, "features": info["features"], "stats": field_stats | camera_stats}
    meta["tasks"] = [[int(index), task] for index, task in sorted(tasks.items())]
    return LeRobotImport(sources, rate, cameras, lineage, meta)


_STAT_NAMES = ("mean", "std", "min", "max")


def _camera_stats(files: RepoFiles, cameras: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The cameras' statistics as LeRobot computed them (``meta/stats.json``: per channel,
    ``(3, 1, 1)``, of pixels in [0, 1], from the frames it sampled), kept as they are: a
    policy normalises its images with them. A camera it lacks, or a file that is not JSON,
    gives none (logged): the frames are not decoded again to compute them."""
    try:
        kept = json.loads(files.local(STATS_FILE).read_text(encoding="utf-8"))
    except ValueError as err:
        logger.warning(
            "%s of %r is not JSON (%s): no image statistics", STATS_FILE, files.folder, err
        )
        return {}
    out = {}
    for name in cameras:
        entry = kept.get(name) if isinstance(kept, dict) else None
        if not isinstance(entry, dict) or not all(k in entry for k in _STAT_NAMES):
            logger.warning(
                "%s of %r has no statistics of camera %r", STATS_FILE, files.folder, name
            )
            continue
        out[name] = {k: entry[k] for k in (*_STAT_NAMES, "count") if k in entry}
    return out


class _FieldStats:
    """``mean``, ``std``, ``min``, ``max`` and ``count`` of every numeric per-frame column, per
    element of a vector (as LeRobot's ``meta/stats.json`` has them), over all the frames of
    the data files added (float64 sums: one pass, any number of files)."""

    def __init__(self) -> None:
        self._sums: dict[str, list[Any]] = {}

    def add(self, table: pa.Table) -> None:
        for name in table.column_names:
            values = _values(table.column(name), name)
            if values is None or isinstance(values, list) or not len(values):
                continue
            data = np.asarray(values, np.float64).reshape(len(values), -1)
            got = self._sums.get(name)
            part = [len(data), data.sum(0), (data**2).sum(0), data.min(0), data.max(0)]
            if got is None:
                self._sums[name] = part
            elif got[1].shape == part[1].shape:
                got[0] += part[0]
                got[1], got[2] = got[1] + part[1], got[2] + part[2]
                got[3], got[4] = np.minimum(got[3], part[3]), np.maximum(got[4], part[4])

    def result(self) -> dict[str, dict[str, list[float]]]:
        out = {}
        for name, (count, total, squares, low, high) in self._sums.items():
            mean = total / count
            std = np.sqrt(np.maximum(squares / count - mean**2, 0.0))
            out[name] = {
                "mean": mean.tolist(),
                "std": std.tolist(),
                "min": low.tolist(),
                "max": high.tolist(),
                "count": [int(count)],
            }
        return out


def _camera_clip(
    files: RepoFiles, episode: dict[str, Any], rows: pa.Table, camera: str, video_path: str
) -> tuple[str, tuple[float, ...]]:
    """``(the camera's video file, the times of the episode's frames in it)``: LeRobot's query,
    ``from_timestamp`` (float64) plus the frame's float32 ``timestamp``."""
    start = float(episode[f"videos/{camera}/from_timestamp"])
    stamps = rows.sort_by("frame_index").column("timestamp").to_numpy().astype(np.float32)
    rel = video_path.format(
        video_key=camera,
        chunk_index=episode[f"videos/{camera}/chunk_index"],
        file_index=episode[f"videos/{camera}/file_index"],
    )
    return rel, tuple(start + float(t) for t in stamps)


def _with_cameras(
    source: _Source,
    files: RepoFiles,
    episode: dict[str, Any],
    rows: pa.Table,
    streams: tuple[str, ...],
    video_path: str,
) -> _Source:
    """``source`` with the cameras ``streams`` as image streams of its clip."""
    if not streams:
        return source
    extra = []
    for name in streams:
        rel, times = _camera_clip(files, episode, rows, name, video_path)
        extra.append((name, files.uri(rel), times))
    clip = dataclasses.replace(source.clip, streams=tuple(extra))
    return dataclasses.replace(source, clip=clip)


def _episode_source(
    files: RepoFiles,
    episode: dict[str, Any],
    rows: pa.Table,
    camera: str,
    video_path: str,
    fps: float,
    tasks: dict[int, str],
    data_file: str,
) -> _Source:
    number = int(episode["episode_index"])
    if rows.num_rows == 0:
        raise ParameterError(f"episode {number} has no rows in {data_file!r} of {files.folder!r}")
    rows = rows.sort_by("frame_index")
    start = float(episode[f"videos/{camera}/from_timestamp"])
    stamps = rows.column("timestamp").to_numpy().astype(np.float32)
    # LeRobot's query: from_timestamp (float64) + the frame's float32 timestamp.
    times = tuple(start + float(t) for t in stamps)
    rel = video_path.format(
        video_key=camera,
        chunk_index=episode[f"videos/{camera}/chunk_index"],
        file_index=episode[f"videos/{camera}/file_index"],
    )
    episode_tasks = episode.get("tasks") or []
    # The dataset's name in the key: episodes of two datasets can share a root (append).
    name = (
        files.folder.split("://datasets/")[-1] if files.is_hub else PurePosixPath(files.folder).name
    )
    key = f"{name}/episode_{number:06d}"
    identity = f"{files.folder}@{files.sha or ''}:{rel}:{start}:{len(times)}"
    return _Source(
        file=files.uri(rel),
        path=key,
        key=key,
        # "episode", not "episode_index": that is a per-frame field (every frame carries it),
        # and a sample cannot hold a metadata field and a per-frame field of one name.
        metadata={
            "episode": number,
            "length": int(episode.get("length", len(times))),
            "tasks": "\n".join(map(str, episode_tasks)),
        },
        checksum=hashlib.sha256(identity.encode()).hexdigest(),
        clip=Clip(
            times=times,
            fps=fps,
            frames=FrameTable("episode", None, {}, files.uri(data_file), number, tasks),
            label=f"{rel} {key}",
        ),
    )


def episode_values(file: str, table: FrameTable) -> dict[str, Any]:
    """Every per-frame column of one episode's rows of a data parquet file, in frame order,
    as ``{name: (T, *shape) array or T strings}`` (plus ``task``, the frame's task string);
    runs in the worker converting the episode.

    Raises:
        _BadClip: the file cannot be read.
    """
    try:
        rows = pq.read_table(file, filters=[("episode_index", "=", table.episode)])
    except (OSError, ValueError) as err:
        raise _BadClip(f"cannot read the episode's rows from {file!r}: {err}") from None
    rows = rows.sort_by("frame_index")
    values: dict[str, Any] = {}
    for name in rows.column_names:
        column = _values(rows.column(name), name)
        if column is not None:
            values[name] = column
    if "task_index" in rows.column_names and table.tasks:
        values["task"] = [table.tasks.get(i, "") for i in rows.column("task_index").to_pylist()]
    return values
