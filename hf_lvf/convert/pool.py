"""Running the conversion tasks: one task per video in worker processes that write Lance
fragments, cancellation, and the worker pool.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParameterError, ParameterTypeError, VideoDecodeError
from ..frames import FRAME_SCHEMA
from ..location import (
    delete_store_file,
    is_object_store_uri,
    read_store_file,
    store_file_exists,
    write_store_file,
)
from ..write.frame_table import write_fragments
from ..write.streams import with_streams
from ..write.writer import frame_batches, frame_encoder
from .decoding import _BadVideo, _Decoder, _FrameOptions, _import_av, _sha256
from .fidelity import FidelityMeter
from .import_worker import clip_checksum, local_file, with_fields
from .source_parts import Clip

logger = logging.getLogger(__name__)

_CANCEL_MARKER = ".hf_lvf-cancelled"
# Frames a task has written so far, in a file of the scratch folder that the parent polls
# (workers may be processes or cluster nodes: the folder is what they all reach; on an
# object store, objects of the root).
_PROGRESS_PREFIX = ".hf_lvf-progress-"
# How often the parent looks at the workers' progress while it waits for results.
_PROGRESS_SECONDS = 0.5
# On an object store each note is a request: a worker looks for the cancel marker and reports
# its progress at most this often.
_REMOTE_NOTE_SECONDS = 1.0


# Videos in flight per worker: enough to keep each worker busy while the parent
# handles a result, few enough that cancellation stays quick.
_TASKS_PER_WORKER = 2


@dataclass(frozen=True)
class _Task:
    video_id: int
    file: str
    path: str
    folder: str
    options: _FrameOptions
    checksum: str | None = None  # the file's SHA-256 if the parent already computed it
    # Threads encoding this video's frames while it is decoded: the cores the other
    # workers leave (encode_in_order keeps the bytes of one thread).
    encode_threads: int = 1
    # Lance's options for a root on an object store: they travel with the task to the worker.
    storage_options: Mapping[str, str] | None = field(default=None, repr=False)
    clip: Clip | None = None  # part of the file, frames at times, per-frame values
    source_options: Mapping[str, str] | None = field(default=None, repr=False)  # hf:// inputs


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
    psnr: float | None = None  # of the stored frames against the source's (fidelity=True)
    frames_measured: int = 0
    field_schema: str = ""  # its per-frame columns, which every video of a root shares
    schema: Any = None  # its Lance schema (FRAME_SCHEMA + the per-frame columns)
    stream_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # other cameras


class _Cancelled(Exception):
    """The conversion was abandoned (the parent left a cancel marker or removed the folder)."""


def _cancellable(
    batches: Iterator[Any],
    folder: str,
    on_batch: Callable[[int], None] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Iterator[Any]:
    """``batches``, stopping when the conversion is cancelled; ``on_batch(frames so far)``
    after each."""
    marker = os.path.join(folder, _CANCEL_MARKER)
    remote = is_object_store_uri(folder)
    written, looked = 0, float("-inf")
    for batch in batches:
        if not remote and (os.path.exists(marker) or not os.path.isdir(folder)):
            raise _Cancelled(f"conversion into {folder!r} was cancelled")
        if remote and time.monotonic() - looked >= _REMOTE_NOTE_SECONDS:
            looked = time.monotonic()
            if store_file_exists(f"{folder}/{_CANCEL_MARKER}", storage_options):
                raise _Cancelled(f"conversion into {folder!r} was cancelled")
        yield batch
        written += batch.num_rows
        if on_batch is not None:
            on_batch(written)


def _progress_path(folder: str | Path, video_id: int) -> Path:
    return Path(folder) / f"{_PROGRESS_PREFIX}{video_id}"


def _write_progress(
    folder: str, video_id: int, frames: int, storage_options: Mapping[str, str] | None = None
) -> None:
    if is_object_store_uri(folder):  # one PUT: the parent reads the old number or the new
        note = f"{folder}/{_PROGRESS_PREFIX}{video_id}"
        write_store_file(note, str(frames).encode(), storage_options)
        return
    path = _progress_path(folder, video_id)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(str(frames))
    os.replace(tmp, path)  # the parent never reads half a number


def _every(seconds: float, call: Callable[[int], None]) -> Callable[[int], None]:
    """``call``, skipped when it ran less than ``seconds`` ago."""
    last = [float("-inf")]

    def throttled(value: int) -> None:
        if time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            call(value)

    return throttled


def read_progress(
    folder: str | Path, video_id: int, storage_options: Mapping[str, str] | None = None
) -> int:
    """Frames the task of ``video_id`` reported written so far (0 if none yet)."""
    try:
        if is_object_store_uri(str(folder)):
            note = f"{folder}/{_PROGRESS_PREFIX}{video_id}"
            return int(read_store_file(note, storage_options, missing_ok=True) or 0)
        return int(_progress_path(folder, video_id).read_text())
    except (OSError, ValueError):
        return 0


def _forget_progress(
    folder: str | Path, video_id: int, storage_options: Mapping[str, str] | None
) -> None:
    if is_object_store_uri(str(folder)):
        delete_store_file(f"{folder}/{_PROGRESS_PREFIX}{video_id}", storage_options)
    else:
        _progress_path(folder, video_id).unlink(missing_ok=True)


def _cancel(folder: str | Path, storage_options: Mapping[str, str] | None) -> None:
    """Leave the marker that tells the workers to stop."""
    if is_object_store_uri(str(folder)):
        try:
            write_store_file(f"{folder}/{_CANCEL_MARKER}", b"", storage_options)
        except OSError as err:  # the tasks under way then run to their end, uncommitted
            logger.warning("could not tell the workers writing %s to stop: %s", folder, err)
    else:
        (Path(folder) / _CANCEL_MARKER).touch()


def _convert_one(task: _Task, on_batch: Callable[[int], None] | None = None) -> _Result:
    """Decode, encode and write one video as fragments of ``task.folder``; runs in a worker.

    Progress (frames written so far) goes to ``on_batch``, or, by default, to a file of the
    folder that the parent reads with :func:`read_progress`."""
    av = _import_av()
    options = task.storage_options
    if is_object_store_uri(task.folder):
        cancelled = store_file_exists(f"{task.folder}/{_CANCEL_MARKER}", options)
    else:
        cancelled = os.path.exists(os.path.join(task.folder, _CANCEL_MARKER))
    if cancelled:
        raise _Cancelled(f"conversion into {task.folder!r} was cancelled")
    try:
        file = local_file(task.file, task.source_options)  # an hf:// input: fetched here
    except OSError as err:
        if task.options.on_error == "raise":
            raise VideoDecodeError(f"cannot convert video {task.path!r}: {err}") from None
        return _Result(task.video_id, skipped=str(err))
    clip = task.clip or Clip()
    decoder = _Decoder(file, task.options, clip)
    o = task.options
    seen = {"T": 0, "size": (0, 0)}

    def on_frame(size: tuple[int, int]) -> None:
        seen["T"] += 1
        seen["size"] = size

    encode = frame_encoder(o.codec, o.quality, o.lossless)
    meter = FidelityMeter(encode, lambda: decoder.expected_frames) if o.fidelity else None
    names = [name for name, _, _ in clip.streams]
    stream_sizes: dict[str, tuple[int, int]] = {}
    try:
        checksum = task.checksum or clip_checksum(file, clip) or _sha256(file)
        frames = decoder.frames()
        if names:  # other cameras: each frame a mapping of its images, one per camera
            frames = _with_cameras(frames, clip, task)
        batches = frame_batches(
            task.video_id,
            task.path,
            frames,
            encode=encode,
            on_frame=on_frame,
            encode_threads=task.encode_threads,
            streams=names,
            video_column="bytes",
            stream_sizes=stream_sizes,
            schema=with_streams(FRAME_SCHEMA, names),
            **({} if meter is None else {"on_encoded": meter.measure}),
        )
        if on_batch is None:
            on_batch = functools.partial(
                _write_progress, task.folder, task.video_id, storage_options=options
            )
            if is_object_store_uri(task.folder):
                on_batch = _every(_REMOTE_NOTE_SECONDS, on_batch)
        fields = {"schema": ""}
        if clip.frames is not None:
            batches = with_fields(batches, clip, decoder, task.path, fields, task.source_options)
        batches = _cancellable(batches, task.folder, on_batch, options)
        schema = FRAME_SCHEMA
        if clip.frames is not None:  # the first batch tells the per-frame columns' types
            first = next(batches, None)
            schema = FRAME_SCHEMA if first is None else first.schema
            batches = itertools.chain([] if first is None else [first], batches)
        fragments = write_fragments(batches, task.folder, options, schema=schema)
    except (_BadVideo, av.error.FFmpegError) as err:
        reason = str(err) if isinstance(err, _BadVideo) else _ffmpeg_reason(err, task.file)
        if task.options.on_error == "raise":
            raise VideoDecodeError(f"cannot convert video {task.path!r}: {reason}") from None
        return _Result(task.video_id, skipped=reason)
    height, width = seen["size"]
    fps = float(task.options.fps) if task.options.fps is not None else decoder.source_fps
    fps = clip.fps if clip.fps is not None else fps
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
        psnr=None if meter is None else meter.psnr,
        frames_measured=0 if meter is None else meter.frames_measured,
        field_schema=fields["schema"],
        schema=schema,
        stream_sizes=stream_sizes,
    )


def _with_cameras(frames: Iterator[Any], clip: Clip, task: _Task) -> Iterator[dict[str, Any]]:
    """Each frame of ``frames`` with the frames of the clip's other cameras at the same
    index (each decoded at its own times), as ``{"bytes": image, camera: image, ...}``.

    Raises:
        _BadVideo: a camera gives fewer or more frames than the main one.
    """
    others = []
    for name, file, times in clip.streams:
        decoder = _Decoder(local_file(file, task.source_options), task.options, Clip(times=times))
        others.append((name, decoder.frames()))
    count = 0
    for count, frame in enumerate(frames, start=1):  # noqa: B007  (count is used after)
        images = {"bytes": frame}
        for name, decoded in others:
            image = next(decoded, None)
            if image is None:
                raise _BadVideo(f"camera {name!r} has {count - 1} frames, fewer than the others")
            images[name] = image
        yield images
    for name, decoded in others:
        if next(decoded, None) is not None:
            raise _BadVideo(f"camera {name!r} has more than the {count} frames of the others")


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


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run(
    tasks: list[_Task],
    submit: Callable[[_Task], Future] | None,
    window: int,
    folder: Path | str,
    on_result: Callable[[_Result], None],
    on_progress: Callable[[int, int], None] = lambda video_id, frames: None,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Run ``tasks`` (in this process if ``submit`` is None), ``window`` at a time.

    ``on_progress(video_id, frames written)`` reports the tasks under way: after each
    batch in this process, every ``_PROGRESS_SECONDS`` from workers.
    On any error, Ctrl-C included, pending tasks are cancelled and running ones
    told to stop, and this returns (by raising) only once none is writing.
    """
    if submit is None:
        for task in tasks:
            on_result(_convert_one(task, functools.partial(on_progress, task.video_id)))
        return
    running: dict[Future, int] = {}
    queue = iter(tasks)
    pending: set[Future] = set()
    try:
        for task in queue:
            future = submit(task)
            pending.add(future)
            running[future] = task.video_id
            if len(pending) >= window:
                break
        while pending:
            done, pending = wait(pending, _PROGRESS_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                _forget_progress(folder, running.pop(future), storage_options)
                on_result(result)
                task = next(queue, None)
                if task is not None:
                    future = submit(task)
                    pending.add(future)
                    running[future] = task.video_id
            for video_id in running.values():
                on_progress(video_id, read_progress(folder, video_id, storage_options))
    except BaseException:
        _cancel(folder, storage_options)
        for future in pending:
            future.cancel()
        wait(pending)  # running tasks stop at their next batch of frames
        raise


def check_workers(workers: Any, executor: Any) -> None:
    """Raises ValueError / TypeError for a bad ``workers`` or ``executor`` of convert_videos."""
    from concurrent.futures import Executor

    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 0
    ):
        raise ParameterError(f"workers must be None or an integer >= 0, got {workers!r}")
    if executor is not None and not isinstance(executor, Executor):
        raise ParameterTypeError(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
        )
    if executor is not None and workers == 0:
        raise ParameterError("workers=0 converts in this process; it cannot be used with executor")


def encode_threads(
    options: _FrameOptions, workers: int | None, executor: Any, num_videos: int
) -> int:
    """Threads that encode each video's frames (:func:`hf_lvf.decode.encode_in_order`): for
    JPEG and lossy WebP, whose Pillow encoders release the GIL, the cores the worker
    processes leave (all of them in this process, ``workers=0``); 1 for lossless frames (PNG
    always is, ``options`` says so), whose Pillow encoders hold it (measured on 720p frames:
    two threads encode no faster than one), and with an ``executor``, whose workers' cores
    are unknown."""
    if options.lossless or executor is not None:
        return 1
    busy = 1 if workers == 0 else workers or max(1, min(_cores(), num_videos))
    return max(1, _cores() // busy)
