"""Video files -> a new lance-video-frames root, in parallel, atomically.

The work is split per video. Each task decodes one file with PyAV, turns its
frames into RGB (optionally resized and resampled to a target frame rate),
encodes them to WebP and writes them as Lance fragments straight into the
root's scratch folder. Only small results travel back to the parent: the
fragment metadata, the frame count and size, the checksum. The parent then
commits every fragment once, in video order, and writes ``_metadata.json``.
So frames never pass through the parent, and a task holds one decoded frame,
one batch of encoded ones and lance's fixed-size write buffer at a time,
whatever the length of its video.

Inputs follow the ``videofolder`` convention of ``datasets``: class
sub-folders give a ``label``; ``metadata.csv`` / ``metadata.jsonl`` files with
a ``file_name`` column give per-video fields.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import logging
import math
import numbers
import os
import signal
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .errors import SkippedVideoWarning, VideoDecodeError
from .frames import commit_fragments, write_fragments
from .layout import VideoInfo
from .writer import (
    atomic_root,
    build_metadata,
    check_metadata,
    check_quality,
    frame_batches,
    write_metadata,
)

if TYPE_CHECKING:
    import av

logger = logging.getLogger(__name__)

#: File name endings a folder walk picks up (case-insensitive). Files and glob
#: matches given explicitly are converted whatever their ending.
VIDEO_EXTENSIONS = (".avi", ".m4v", ".mkv", ".mov", ".mp4", ".mpeg", ".mpg", ".webm")
METADATA_FILENAMES = ("metadata.csv", "metadata.jsonl")
_INSTALL_HINT = "converting video files needs PyAV: pip install 'hf-lvf[video]'"
# A file whose decoded frames cover less than this share of the frame count or
# duration its header declares is treated as truncated.
_MIN_DECODED_SHARE = 0.9
# Decoder threads per task. Measured on 224x224 H.264 and VP9 (2 cores): one
# thread decodes 2000-2200 frames/s, FFmpeg's automatic threading 1700-2000, and
# WebP encoding (~330 frames/s) is the bottleneck anyway; more threads per
# process would only compete with the other workers.
_DECODE_THREADS = 1
# swscale threads for the YUV -> RGB conversion (and resize) of each frame. PyAV 18
# defaults to "automatic", which starts and joins a thread per core for every frame:
# measured on 224x224 H.264 (2 cores, PyAV 18.1), 0.62 ms CPU per frame against
# 0.21 ms with one thread and one context reused across the video, and the idle waits
# of those threads cost 2 workers a third of their wall time. Output is bit-exact
# either way (checked on unscaled, AREA-shrunk and BICUBIC-enlarged frames).
_SCALE_THREADS = 1
_CANCEL_MARKER = ".hf_lvf-cancelled"
# Videos in flight per worker: enough to keep each worker busy while the parent
# handles a result, few enough that cancellation stays quick.
_TASKS_PER_WORKER = 2

OnError = Literal["skip", "raise"]


# --- options and results ---


@dataclass(frozen=True, kw_only=True)
class _FrameOptions:
    """How frames are produced from a source file; validated, picklable, sent to every task."""

    quality: int = 65
    resize: int | tuple[int, int] | None = None
    fps: Fraction | None = None
    on_error: OnError = "skip"

    def __post_init__(self) -> None:
        check_quality(self.quality)
        object.__setattr__(self, "resize", _check_resize(self.resize))
        object.__setattr__(self, "fps", _check_fps(self.fps))
        if self.on_error not in ("skip", "raise"):
            raise ValueError(f"on_error must be 'skip' or 'raise', got {self.on_error!r}")


def _check_resize(resize: object) -> int | tuple[int, int] | None:
    if resize is None:
        return None
    if isinstance(resize, numbers.Integral) and not isinstance(resize, bool):
        if resize < 1:
            raise ValueError(f"resize must be >= 1, got {resize!r}")
        return int(resize)
    if (
        isinstance(resize, Sequence)
        and not isinstance(resize, str)
        and len(resize) == 2
        and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in resize)
        and min(resize) >= 1
    ):
        return int(resize[0]), int(resize[1])
    raise ValueError(
        f"resize must be None, a positive int (the shorter side) or a pair of positive ints "
        f"(H, W), got {resize!r}"
    )


def _check_fps(fps: object) -> Fraction | None:
    if fps is None:
        return None
    if (
        isinstance(fps, bool)
        or not isinstance(fps, numbers.Real)
        or not math.isfinite(fps)
        or fps <= 0
    ):
        raise ValueError(f"fps must be a positive finite number or None, got {fps!r}")
    return Fraction(fps).limit_denominator(1_000_000)


@dataclass(frozen=True)
class SkippedVideo:
    """An input that could not be converted.

    Attributes:
        path: the input's ``path`` (as it would have been recorded).
        reason: why, in words (the decoder's message for a corrupt file).
    """

    path: str
    reason: str


@dataclass(frozen=True)
class ConversionSummary:
    """What :func:`convert_videos` wrote.

    Attributes:
        root: the new root.
        num_videos: videos in the root.
        num_frames: frames in the root (its Lance rows).
        skipped: inputs that could not be converted, by path.
        seconds: wall time of the conversion.
    """

    root: Path
    num_videos: int
    num_frames: int
    skipped: tuple[SkippedVideo, ...] = ()
    seconds: float = 0.0

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    @property
    def frames_per_second(self) -> float:
        """Frames converted per second of wall time."""
        return self.num_frames / self.seconds if self.seconds > 0 else float("nan")


# --- inputs: files, globs, videofolder-style folders ---


@dataclass(frozen=True)
class _Source:
    file: str  # absolute path to open
    path: str  # as recorded: relative to its input folder, or as given
    key: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Found:
    file: Path
    path: str
    label_dir: str | None = None  # parent folder name (folder inputs), for labels
    depth: int = 0  # path components below the input folder
    fields: dict[str, Any] | None = None  # its metadata-file row, if it has one


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _collect_sources(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    extensions: Sequence[str] = VIDEO_EXTENSIONS,
) -> tuple[list[_Source], list[str] | None]:
    """Resolve ``inputs`` to the videos to convert, sorted by recorded path.

    Returns:
        The sources, and the sorted label names if folder labels were inferred.

    Raises:
        FileNotFoundError: an input does not exist, a glob matches no file or a
            folder holds no video file.
        ValueError: two inputs record the same path or key, or a metadata file
            is malformed or names a file that is not one of the folder's videos.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ValueError("inputs is empty: pass video files, globs or folders")
    suffixes = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    found: list[_Found] = []
    for item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"inputs must be paths or glob patterns, got {item!r}")
        text = os.fspath(item)
        path = Path(text)
        if path.is_dir():
            found.extend(_walk_folder(path, suffixes))
        elif path.is_file():
            found.append(_Found(file=path.absolute(), path=path.as_posix()))
        elif _is_glob(text):
            matches = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
            if not matches:
                raise FileNotFoundError(f"no file matches the input pattern {text!r}")
            found.extend(_Found(file=Path(m).absolute(), path=Path(m).as_posix()) for m in matches)
        else:
            raise FileNotFoundError(f"input {text!r} is not a file, a folder or a glob pattern")
    label_names = _infer_labels(found)
    return _to_sources(found, label_names), label_names


def _walk_folder(folder: Path, suffixes: tuple[str, ...]) -> list[_Found]:
    videos: dict[str, _Found] = {}
    metadata_files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel_dir = Path(dirpath).relative_to(folder)
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in sorted(filenames):
            if _hidden(name):
                continue
            file = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if name in METADATA_FILENAMES:
                metadata_files.append(file)
            elif file.suffix.lower() in suffixes:
                parts = PurePosixPath(rel).parts
                videos[rel] = _Found(
                    file=file.absolute(),
                    path=rel,
                    label_dir=parts[-2] if len(parts) > 1 else None,
                    depth=len(parts),
                )
    if not videos:
        raise FileNotFoundError(f"no video files ({', '.join(suffixes)}) in folder {str(folder)!r}")
    for metadata_file in metadata_files:
        _attach_metadata(folder, metadata_file, videos)
    return list(videos.values())


def _read_metadata_rows(metadata_file: Path) -> list[dict[str, Any]]:
    if metadata_file.name.endswith(".csv"):
        import pyarrow.csv

        try:
            return pyarrow.csv.read_csv(metadata_file).to_pylist()
        except (OSError, ValueError) as err:  # ArrowInvalid is a ValueError
            raise ValueError(f"cannot read metadata file {str(metadata_file)!r}: {err}") from err
    rows = []
    with open(metadata_file, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                raise ValueError(
                    f"line {line_no} of metadata file {str(metadata_file)!r} is not JSON: {err}"
                ) from err
            if not isinstance(row, dict):
                raise ValueError(
                    f"line {line_no} of metadata file {str(metadata_file)!r} must be a JSON "
                    f"object, got {row!r}"
                )
            rows.append(row)
    return rows


def _attach_metadata(folder: Path, metadata_file: Path, videos: dict[str, _Found]) -> None:
    """Give the videos a metadata file names (``file_name`` relative to the file's folder)
    its other columns as per-video fields."""
    where = str(metadata_file)
    base = metadata_file.parent.relative_to(folder)
    for row_no, row in enumerate(_read_metadata_rows(metadata_file)):
        if "file_name" not in row:
            raise ValueError(
                f"metadata file {where!r} row {row_no} has no 'file_name' column (columns: "
                f"{', '.join(map(str, row))})"
            )
        name = row.pop("file_name")
        if not isinstance(name, str) or not name or "://" in name:
            raise ValueError(
                f"metadata file {where!r} row {row_no}: file_name must be a relative path, "
                f"got {name!r}"
            )
        rel = PurePosixPath(os.path.normpath((base / name).as_posix())).as_posix()
        if PurePosixPath(name).is_absolute() or rel.startswith("../") or rel == "..":
            raise ValueError(
                f"metadata file {where!r} row {row_no}: file_name {name!r} points outside "
                f"folder {str(folder)!r}"
            )
        video = videos.get(rel)
        if video is None:
            raise ValueError(
                f"metadata file {where!r} row {row_no} names {name!r}, which is not a video "
                f"file of folder {str(folder)!r}"
            )
        if video.fields is not None:
            raise ValueError(f"metadata for {rel!r} appears twice (last in {where!r})")
        video.fields = row


def _infer_labels(found: list[_Found]) -> list[str] | None:
    """Class names from folder names, as ``datasets``' videofolder infers them: only when
    every video of the folder inputs sits at the same depth, with more than one name."""
    from_folders = [f for f in found if f.depth > 0]
    names = {f.label_dir for f in from_folders}
    depths = {f.depth for f in from_folders}
    if len(depths) != 1 or None in names or len(names) < 2:
        return None
    return sorted(names)


def _to_sources(found: list[_Found], label_names: list[str] | None) -> list[_Source]:
    label_of = {name: i for i, name in enumerate(label_names or [])}
    columns: dict[str, None] = {}
    for f in found:
        columns.update(dict.fromkeys(f.fields or {}))
    if "fps" in columns:
        raise ValueError(
            "metadata field 'fps' is reserved: the converter records the frame rate of the "
            "stored frames there; rename that metadata column"
        )
    found = sorted(found, key=lambda f: f.path)
    stems = [str(PurePosixPath(f.path).with_suffix("")) for f in found]
    stem_counts = Counter(stems)
    sources: dict[str, _Source] = {}
    for f, stem in zip(found, stems, strict=True):
        if f.path in sources:
            raise ValueError(
                f"two inputs give the same video path {f.path!r} ({sources[f.path].file!r} and "
                f"{str(f.file)!r}); pass each video once"
            )
        # The key is the path without its extension, unless that would not be unique.
        key = stem if stem_counts[stem] == 1 and stem else f.path
        fields: dict[str, Any] = {}
        if label_names is not None and f.depth > 0:
            fields["label"] = label_of[f.label_dir]
        # Every video gets every metadata column (None where it has no row), so each
        # field has one type across the root; a row's "label" overrides the folder's.
        for name in columns:
            if f.fields is not None and name in f.fields:
                fields[name] = f.fields[name]
            else:
                fields.setdefault(name, None)
        sources[f.path] = _Source(
            file=str(f.file), path=f.path, key=key, metadata=check_metadata(key, fields)
        )
    return list(sources.values())


# --- one task: decode a file, write its fragments ---


@dataclass(frozen=True)
class _Task:
    video_id: int
    file: str
    path: str
    folder: str
    options: _FrameOptions


@dataclass(frozen=True)
class _Result:
    video_id: int
    fragments: list[Any] = field(default_factory=list)
    num_frames: int = 0
    height: int = 0
    width: int = 0
    fps: float | None = None
    source_fps: float | None = None
    codec: str | None = None
    checksum: str | None = None
    skipped: str | None = None  # the reason, if the file was skipped


class _BadVideo(Exception):
    """The file cannot be converted (raised inside a task, turned into a skip or an error)."""


class _Cancelled(Exception):
    """The conversion was abandoned (the parent left a cancel marker or removed the folder)."""


def _import_av() -> Any:
    try:
        import av
    except ImportError as err:
        raise ImportError(_INSTALL_HINT) from err
    return av


@functools.cache
def _scale_threads() -> dict[str, int]:
    """``threads=`` for ``VideoReformatter.reformat`` if this PyAV takes it, else nothing
    (versions without the argument scale in the calling thread anyway)."""
    av = _import_av()
    try:
        av.VideoFrame(2, 2, "yuv420p").reformat(format="rgb24", threads=_SCALE_THREADS)
    except TypeError:
        return {}
    return {"threads": _SCALE_THREADS}


def _sha256(file: str) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _output_size(height: int, width: int, resize: int | tuple[int, int] | None) -> tuple[int, int]:
    """``(H, W)`` of the stored frames for a ``height x width`` source.

    ``None`` keeps the size; an int ``n`` scales the shorter side to ``n`` and the
    longer one by the same factor, rounded to the nearest integer; ``(H, W)`` is
    taken as is.
    """
    if resize is None:
        return height, width
    if isinstance(resize, tuple):
        return resize
    if height <= width:
        return resize, max(1, round(width * resize / height))
    return max(1, round(height * resize / width)), resize


def _float_rate(rate: Any) -> float | None:
    return float(rate) if rate else None


class _Decoder:
    """Streams the RGB frames of one file, resized and resampled; records what it saw."""

    def __init__(self, file: str, options: _FrameOptions):
        self.file = file
        self.options = options
        self.codec: str | None = None
        self.source_fps: float | None = None
        self.num_decoded = 0
        self._first_time: float | None = None
        self._last_time: float | None = None

    def frames(self) -> Iterator[np.ndarray]:
        av = _import_av()
        from av.video.reformatter import VideoReformatter

        if os.path.getsize(self.file) == 0:
            raise _BadVideo("the file is empty (0 bytes)")
        with av.open(self.file) as container:
            if not container.streams.video:
                kinds = ", ".join(s.type for s in container.streams) or "none"
                raise _BadVideo(f"the file has no video stream (streams: {kinds})")
            stream = container.streams.video[0]
            stream.thread_type = "SLICE"
            stream.codec_context.thread_count = _DECODE_THREADS
            self.codec = stream.codec_context.name
            self.source_fps = _float_rate(stream.average_rate or stream.guessed_rate)
            reformatter = VideoReformatter()  # one swscale context for the whole video
            decoded = self._count(container.decode(stream))
            chosen = decoded if self.options.fps is None else self._resample(decoded, stream)
            size: tuple[int, int] | None = None
            last: tuple[Any, np.ndarray] | None = None
            for frame in chosen:
                if last is not None and last[0] is frame:  # upsampling repeats a frame
                    yield last[1]
                    continue
                if size is None:
                    size = _output_size(frame.height, frame.width, self.options.resize)
                array = self._to_rgb(reformatter, frame, size)
                last = (frame, array)
                yield array
            self._check_complete(container, stream)

    def _count(self, decoded: Iterator[av.VideoFrame]) -> Iterator[av.VideoFrame]:
        for frame in decoded:
            if self.num_decoded == 0:
                self._first_time = frame.time
            self.num_decoded += 1
            self._last_time = frame.time
            yield frame

    def _to_rgb(self, reformatter: Any, frame: av.VideoFrame, size: tuple[int, int]) -> np.ndarray:
        height, width = size
        options: dict[str, Any] = {"format": "rgb24", **_scale_threads()}
        if (frame.height, frame.width) != size:
            # Area averaging when shrinking avoids aliasing; bicubic when enlarging.
            shrink = height <= frame.height and width <= frame.width
            options.update(
                width=width, height=height, interpolation="AREA" if shrink else "BICUBIC"
            )
        return reformatter.reformat(frame, **options).to_ndarray()

    def _resample(self, decoded: Iterator[av.VideoFrame], stream: Any) -> Iterator[av.VideoFrame]:
        """At each output tick ``t_k = t_0 + k / fps`` (``t_0`` the first frame's timestamp,
        the tick rounded to the stream's time base), the last frame presented at or
        before ``t_k``; ticks run up to the last frame's timestamp."""
        step = 1 / (self.options.fps * Fraction(stream.time_base))  # ticks in pts units
        current = None
        first_pts = tick = k = 0
        for frame in decoded:
            if frame.pts is None:
                raise _BadVideo(
                    f"frame {self.num_decoded - 1} has no timestamp, so it cannot be resampled "
                    f"to fps={float(self.options.fps)}"
                )
            if current is None:
                current, first_pts, tick = frame, frame.pts, frame.pts
                continue
            if frame.pts < current.pts:  # out of presentation order: keep the later one
                continue
            while tick < frame.pts:
                yield current
                k += 1
                tick = first_pts + round(k * step)
            current = frame
        if current is None:
            return
        while tick <= current.pts:
            yield current
            k += 1
            tick = first_pts + round(k * step)

    def _check_complete(self, container: Any, stream: Any) -> None:
        if self.num_decoded == 0:
            raise _BadVideo("no video frame could be decoded")
        declared_frames = stream.frames or 0
        if declared_frames and self.num_decoded < _MIN_DECODED_SHARE * declared_frames:
            raise _BadVideo(
                f"the file looks truncated: its header declares {declared_frames} frames but "
                f"only {self.num_decoded} could be decoded"
            )
        if stream.duration:
            declared = float(stream.duration * stream.time_base)
        elif container.duration and len(container.streams) == 1:
            declared = container.duration / 1_000_000  # AV_TIME_BASE
        else:
            return
        interval = 1 / self.source_fps if self.source_fps else 0.0
        covered = (self._last_time or 0.0) - (self._first_time or 0.0) + interval
        if covered < _MIN_DECODED_SHARE * declared:
            raise _BadVideo(
                f"the file looks truncated: its header declares {declared:.2f} s but the "
                f"{self.num_decoded} decodable frames cover {covered:.2f} s"
            )


def _cancellable(batches: Iterator[Any], folder: str) -> Iterator[Any]:
    marker = os.path.join(folder, _CANCEL_MARKER)
    for batch in batches:
        if os.path.exists(marker) or not os.path.isdir(folder):
            raise _Cancelled(f"conversion into {folder!r} was cancelled")
        yield batch


def _convert_one(task: _Task) -> _Result:
    """Decode, encode and write one video as fragments of ``task.folder``; runs in a worker."""
    av = _import_av()
    if os.path.exists(os.path.join(task.folder, _CANCEL_MARKER)):
        raise _Cancelled(f"conversion into {task.folder!r} was cancelled")
    decoder = _Decoder(task.file, task.options)
    seen = {"T": 0, "size": (0, 0)}

    def on_frame(size: tuple[int, int]) -> None:
        seen["T"] += 1
        seen["size"] = size

    try:
        checksum = _sha256(task.file)
        batches = frame_batches(
            task.video_id,
            task.path,
            decoder.frames(),
            quality=task.options.quality,
            on_frame=on_frame,
        )
        fragments = write_fragments(_cancellable(batches, task.folder), task.folder)
    except (_BadVideo, av.error.FFmpegError) as err:
        reason = str(err) if isinstance(err, _BadVideo) else _ffmpeg_reason(err, task.file)
        if task.options.on_error == "raise":
            raise VideoDecodeError(f"cannot convert video {task.path!r}: {reason}") from None
        return _Result(task.video_id, skipped=reason)
    height, width = seen["size"]
    fps = float(task.options.fps) if task.options.fps is not None else decoder.source_fps
    return _Result(
        task.video_id,
        fragments=fragments,
        num_frames=seen["T"],
        height=height,
        width=width,
        fps=fps,
        source_fps=decoder.source_fps,
        codec=decoder.codec,
        checksum=checksum,
    )


def _ffmpeg_reason(err: Any, file: str) -> str:
    where = err.filename if err.filename and err.filename != file else None
    return f"FFmpeg cannot decode it: {err.strerror}" + (f" (in {where})" if where else "")


def _init_worker() -> None:
    # Ctrl-C reaches the whole process group: only the parent reacts (it cancels the
    # tasks through the marker), so workers do not die mid-write with tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked since its start (_submit_to_pool)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _submit_to_pool(pool: ProcessPoolExecutor, task: _Task) -> Future:
    """``pool.submit(_convert_one, task)`` with SIGINT blocked in this thread.

    The pool starts its worker processes inside ``submit``, and a spawned child
    inherits this thread's signal mask. So a Ctrl-C while a worker is still
    starting up (importing, before :func:`_init_worker` ignores SIGINT) stays
    pending in it and is then discarded, instead of killing it with a traceback;
    this process gets the Ctrl-C as soon as the mask is restored.
    """
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX
        return pool.submit(_convert_one, task)
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return pool.submit(_convert_one, task)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


# --- the parent: schedule tasks, collect results, commit ---


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run(
    tasks: list[_Task],
    submit: Callable[[_Task], Future] | None,
    window: int,
    folder: Path,
    on_result: Callable[[_Result], None],
) -> None:
    """Run ``tasks`` (in this process if ``submit`` is None), ``window`` at a time.

    On any error, Ctrl-C included, pending tasks are cancelled and running ones
    told to stop, and this returns (by raising) only once none is writing.
    """
    if submit is None:
        for task in tasks:
            on_result(_convert_one(task))
        return
    queue = iter(tasks)
    pending: set[Future] = set()
    try:
        for task in queue:
            pending.add(submit(task))
            if len(pending) >= window:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                on_result(future.result())
                task = next(queue, None)
                if task is not None:
                    pending.add(submit(task))
    except BaseException:
        (folder / _CANCEL_MARKER).touch()
        for future in pending:
            future.cancel()
        wait(pending)  # running tasks stop at their next batch of frames
        raise


def convert_videos(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    root: str | os.PathLike[str],
    *,
    quality: int = 65,
    resize: int | tuple[int, int] | None = None,
    fps: float | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
    on_error: OnError = "skip",
    overwrite: bool = False,
    extensions: Sequence[str] = VIDEO_EXTENSIONS,
    lineage: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> ConversionSummary:
    """Convert video files to a new lance-video-frames root.

    Each video is decoded with PyAV, its frames converted to RGB, optionally
    resized and resampled, WebP-encoded with Pillow and written as Lance
    fragments by a worker; the parent commits all fragments once. The root
    appears only when complete: an error, Ctrl-C or a killed worker leaves no
    root and no temporary folder, and a run after a killed one cleans up what
    it left.

    What the root records (FORMAT.md): videos sorted by ``path``; ``id`` is the
    video's position among the sorted inputs (so ids skip the numbers of
    skipped inputs); ``key`` is the path without its extension (with it, when
    two files differ only by extension); ``checksum`` the SHA-256 of the source
    file; ``metadata`` the label and metadata-file fields plus ``fps``, the rate
    of the stored frames (``fps`` if given, else the source's average rate);
    extra entry fields ``source_fps`` and ``codec`` (FFmpeg's decoder name).
    ``resize`` is recorded as given (an int, or ``[H, W]``), ``n_skipped``
    counts the skipped inputs.

    Args:
        inputs: video files, glob patterns (``**`` recurses) or folders, or a list
            of them. A folder follows ``datasets``' ``videofolder`` convention:
            its video files (by ``extensions``, hidden ones skipped) are found
            recursively and recorded by their path relative to the folder; when
            they all sit at the same depth in more than one sub-folder, the
            sub-folder name gives an integer ``label`` (index into the sorted
            names, stored as ``label_names`` in ``_metadata.json``); every
            ``metadata.csv`` / ``metadata.jsonl`` in the folder adds its columns
            as per-video fields to the file its ``file_name`` column names
            (relative to the metadata file; a ``label`` column overrides the
            folder label; a video without a row gets ``None`` for each column).
            Files and glob matches are recorded by the path given.
        root: the folder to create; it must be on a filesystem every worker can
            reach (workers write into it).
        quality: WebP quality, 0-100.
        resize: ``None`` keeps each video's size; an int ``n`` scales the shorter
            side to ``n`` (the longer one by the same factor, rounded); ``(H, W)``
            resizes to exactly that. FFmpeg's swscale resizes (area averaging
            when shrinking, bicubic when enlarging).
        fps: ``None`` keeps every decoded frame. Otherwise frames are picked by
            presentation timestamp at output ticks ``t_k = t_0 + k / fps`` (``t_0``
            the first frame's timestamp, ticks up to the last frame's): the last
            frame shown at or before each tick, so frames are dropped when
            ``fps`` is below the source rate and repeated when above.
        workers: worker processes of the default pool (default: one per core,
            at most one per video); ``0`` converts in this process. With
            ``executor``, the number of videos submitted at a time is
            ``2 * workers`` (default: ``2 * cores``).
        executor: any ``concurrent.futures.Executor`` to run the per-video tasks,
            e.g. a Dask ``Client.get_executor()`` so a cluster converts; it is not
            shut down. The default is a process pool started with ``spawn``
            (pylance is not fork-safe).
        on_error: ``"skip"`` skips a corrupt, truncated, empty or audio-only file
            with a :class:`~hf_lvf.errors.SkippedVideoWarning` naming it and why,
            and counts it in ``n_skipped``; ``"raise"`` raises
            :class:`~hf_lvf.errors.VideoDecodeError` instead.
        overwrite: replace an existing root (atomically) instead of refusing.
        extensions: file endings a folder walk picks up.
        lineage: free-form provenance merged into ``_metadata.json``'s ``lineage``.
        progress: show a progress bar (videos done, frames written, files
            skipped); ``huggingface_hub``'s progress-bar settings apply.

    Returns:
        A :class:`ConversionSummary`.

    Raises:
        ValueError, TypeError: a bad argument or metadata file (before any work).
        FileNotFoundError: an input does not exist or matches no video.
        FileExistsError: ``root`` exists and ``overwrite`` is false.
        ImportError: PyAV is not installed.
        VideoDecodeError: ``on_error="raise"`` and a file cannot be converted, or
            no input could be converted.
        concurrent.futures.process.BrokenProcessPool: a worker process died.

    Example:
        >>> summary = convert_videos("clips/", "clips_root", resize=224, fps=8)  # doctest: +SKIP
        >>> summary.num_videos, summary.n_skipped  # doctest: +SKIP
        (120, 1)
    """
    started = time.perf_counter()
    options = _FrameOptions(quality=quality, resize=resize, fps=fps, on_error=on_error)
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 0
    ):
        raise ValueError(f"workers must be None or an integer >= 0, got {workers!r}")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
        )
    if executor is not None and workers == 0:
        raise ValueError("workers=0 converts in this process; it cannot be used with executor")
    sources, label_names = _collect_sources(inputs, extensions=extensions)
    _import_av()  # fail before creating anything if PyAV is missing

    with atomic_root(root, overwrite=overwrite) as scratch:
        tasks = [
            _Task(video_id=i, file=s.file, path=s.path, folder=str(scratch), options=options)
            for i, s in enumerate(sources)
        ]
        results: dict[int, _Result] = {}
        bar = _progress_bar(len(tasks), enabled=progress)
        counts = {"frames": 0, "skipped": 0}

        def on_result(result: _Result) -> None:
            results[result.video_id] = result
            counts["frames"] += result.num_frames
            if result.skipped is not None:
                counts["skipped"] += 1
                logger.info("skipped %s: %s", sources[result.video_id].path, result.skipped)
            bar.set_postfix(counts, refresh=False)
            bar.update(1)

        try:
            if executor is not None:
                window = _TASKS_PER_WORKER * (workers or _cores())
                _run(tasks, lambda t: executor.submit(_convert_one, t), window, scratch, on_result)
            elif workers == 0:
                _run(tasks, None, 1, scratch, on_result)
            else:
                n = workers or max(1, min(_cores(), len(tasks)))
                import multiprocessing

                pool = ProcessPoolExecutor(
                    max_workers=n,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                )
                try:
                    window = _TASKS_PER_WORKER * n
                    _run(tasks, lambda t: _submit_to_pool(pool, t), window, scratch, on_result)
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        finally:
            bar.close()

        ordered = [results[i] for i in range(len(tasks))]
        skipped = tuple(
            SkippedVideo(sources[r.video_id].path, r.skipped) for r in ordered if r.skipped
        )
        for item in skipped:
            warnings.warn(
                f"skipped video {item.path!r}: {item.reason}", SkippedVideoWarning, stacklevel=2
            )
        converted = [r for r in ordered if r.skipped is None]
        if not converted:
            raise VideoDecodeError(
                f"none of the {len(tasks)} input videos could be converted; first: "
                f"{skipped[0].path!r}: {skipped[0].reason}"
            )
        commit_fragments(scratch, [f for r in converted for f in r.fragments])
        entries = _entries(converted, sources)
        metadata = build_metadata(
            entries,
            quality=options.quality,
            resize=list(options.resize) if isinstance(options.resize, tuple) else options.resize,
            n_skipped=len(skipped),
            lineage={
                "converter": "hf_lvf.convert_videos",
                "fps": None if options.fps is None else float(options.fps),
                **dict(lineage or {}),
            },
        )
        if label_names is not None:
            metadata["label_names"] = label_names
        write_metadata(scratch, metadata)
    return ConversionSummary(
        root=Path(root).absolute(),
        num_videos=len(entries),
        num_frames=sum(e["T"] for e in entries),
        skipped=skipped,
        seconds=time.perf_counter() - started,
    )


def _entries(converted: list[_Result], sources: list[_Source]) -> list[dict[str, Any]]:
    entries = []
    start_row = 0
    for result in converted:
        source = sources[result.video_id]
        entries.append(
            VideoInfo(
                video_idx=len(entries),
                id=result.video_id,
                key=source.key,
                path=source.path,
                checksum=result.checksum,
                num_frames=result.num_frames,
                height=result.height,
                width=result.width,
                start_row=start_row,
                # "fps" is the rate of the stored frames (the target fps, or the source's
                # average rate): samples carry it, and frame_idx / fps is a time in seconds.
                metadata={**source.metadata, "fps": result.fps},
                # Extra entry fields (FORMAT.md keeps unknown fields): provenance.
                extra={"source_fps": result.source_fps, "codec": result.codec},
            ).to_json()
        )
        start_row += result.num_frames
    return entries


def _progress_bar(total: int, *, enabled: bool) -> Any:
    from huggingface_hub.utils import tqdm as hf_tqdm

    return hf_tqdm(total=total, unit="video", desc="Converting videos", disable=not enabled or None)


__all__ = ["ConversionSummary", "SkippedVideo", "VIDEO_EXTENSIONS", "convert_videos"]
