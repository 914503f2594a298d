"""``convert_videos``: video files -> a new lance-video-frames root, in parallel, atomically."""

from __future__ import annotations

import functools
import logging
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ..decode import DEFAULT_QUALITY, Codec
from ..errors import ParameterError, SkippedVideoWarning, VideoDecodeError
from ..frames import FRAME_SCHEMA
from ..location import is_object_store_uri, lance_options
from ..plan import Crop
from ..processes import check_main_guard
from ..write.append import WriteMode, resolve_mode
from ..write.proxies import add_proxy
from ..write.streams import stream_entries
from .appending import (
    _destination,
    _known_labels,
    _plan_append,
    _write_new_root,
)
from .decoding import OnError, _FrameOptions, _import_av
from .entries import _entries, check_field_schemas, check_joins
from .imports import Resolved, cameras_of, import_scratch, lerobot_files, resolve
from .pool import (
    _TASKS_PER_WORKER,
    _convert_one,
    _cores,
    _init_worker,
    _Result,
    _run,
    _submit_to_pool,
    _Task,
    check_workers,
    encode_threads,
)
from .sources import VIDEO_EXTENSIONS
from .splits import Splits, check_splits, convert_splits, split_sources
from .summary import ConversionSummary, SkippedVideo

logger = logging.getLogger(__name__)


def convert_videos(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    root: str | os.PathLike[str],
    *,
    codec: Codec = "webp",
    quality: int = DEFAULT_QUALITY,
    lossless: bool = False,
    resize: int | tuple[int, int] | None = None,
    crop: Crop = "none",
    fps: float | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
    on_error: OnError = "skip",
    fidelity: bool = True,
    mode: WriteMode = "create",
    overwrite: bool = False,
    extensions: Sequence[str] = VIDEO_EXTENSIONS,
    lineage: Mapping[str, Any] | None = None,
    progress: bool = True,
    storage_options: Mapping[str, str] | None = None,
    camera: str | Sequence[str] | None = None,
    spans: Any = None,
    frame_values: Any = None,
    splits: Splits = "auto",
    proxies: Sequence[int] = (),
) -> ConversionSummary:
    """Convert video files, or a dataset that holds videos, to a new lance-video-frames root.

    Each video is decoded with PyAV, resized and resampled if asked, encoded (WebP, JPEG or
    PNG) and written as Lance fragments by a worker; the parent commits all fragments once,
    so the root appears only when complete. What each argument does in full, and what the
    root records: [the converting guide](../guides/converting.md#convert-videos-arguments).

    Args:
        inputs: video files, glob patterns or folders (``videofolder`` labels, metadata
            files, split folders), or a dataset that holds videos (LeRobot, webdataset,
            ``datasets``, a Hub ``videofolder`` repo), or a list of them.
        root: the root to create: a folder every worker can reach, or an object-store URL.
        codec: ``"webp"`` (the layout's own), ``"jpeg"`` or ``"png"``.
        quality: the encoder's quality, 0-100 (ignored where lossless).
        lossless: lossless WebP (``codec="webp"`` only).
        resize: ``None`` (each video's size), an int (the shorter side) or ``(H, W)``.
        crop: ``"none"`` or ``"center"`` (scale to cover ``resize``, cut out the middle).
        fps: ``None`` keeps every frame; else frames are picked at this rate.
        workers: worker processes (default: one per core); ``0`` converts in this process.
        executor: a ``concurrent.futures.Executor`` to run the per-video tasks on instead.
        on_error: ``"skip"`` (warn and count) or ``"raise"`` on a file that cannot convert.
        fidelity: measure and record each video's PSNR (``False`` skips it).
        mode: ``"create"``, ``"overwrite"`` or ``"append"`` (into an existing root).
        overwrite: ``True`` is ``mode="overwrite"``.
        extensions: file endings a folder walk picks up.
        lineage: free-form provenance merged into ``_metadata.json``'s ``lineage``.
        progress: show a progress bar.
        storage_options: lance's options for a root on an object store.
        camera: a LeRobot dataset's camera(s) to convert (default: all, into one root: the
            first in ``bytes``, every other one an image stream of its key).
        spans: captioned time spans keyed by file (a table or a .csv/.jsonl/.parquet file).
        frame_values: per-frame values keyed by file and frame or timestamp.
        proxies: shorter sides (``[224]``) of proxy streams written into each new root.
        splits: ``"auto"`` (one root per split found) or ``"none"`` (one root).

    Returns:
        A :class:`ConversionSummary`.

    Raises:
        ValueError, TypeError: a bad argument or metadata file, a lossless JPEG, or
            (append) settings other than the root's (all before any work).
        FileNotFoundError: an input does not exist or matches no video.
        FileExistsError: ``root`` exists and ``mode`` is ``"create"`` (splits: is a root, or
            holds one of them); in a bucket, what cannot be replaced whole (see ``splits``).
        BlockingIOError: another process is writing ``root``.
        ImportError: PyAV is not installed.
        VideoDecodeError: ``on_error="raise"`` and a file cannot be converted, or
            no input could be converted.
        RuntimeError: called from a script's top level without the
            ``if __name__ == "__main__":`` guard, which spawned workers need.
        concurrent.futures.process.BrokenProcessPool: a worker process died.

    Examples:
        >>> summary = convert_videos("clips/", "clips_root", resize=224, fps=8)  # doctest: +SKIP
        >>> summary.num_videos, summary.n_skipped  # doctest: +SKIP
        (120, 1)
    """
    started = time.perf_counter()
    check_splits(splits)
    mode = resolve_mode(mode, overwrite)
    options = _FrameOptions(
        codec=codec,
        quality=quality,
        lossless=lossless,
        resize=resize,
        fps=fps,
        on_error=on_error,
        crop=crop,
        fidelity=fidelity,
    )
    proxies = _check_proxies(proxies, mode)
    check_workers(workers, executor)
    if executor is None and workers != 0:
        check_main_guard("convert_videos")  # before its worker processes would re-run the script
    storage_options = lance_options(storage_options) or None  # also drops datasets' "hf"
    files = lerobot_files(inputs)
    if files is not None:
        cameras = cameras_of(files, camera)
        camera = cameras[0] if len(cameras) == 1 else cameras
    elif camera is not None:
        raise ParameterError(f"camera={camera!r} is for a LeRobot dataset; {inputs!r} is none")
    known_labels = _known_labels(root, mode, storage_options)
    _import_av()  # fail before creating anything if PyAV is missing
    with import_scratch(root) as rows:
        resolved = resolve(
            inputs,
            extensions=extensions,
            known_labels=known_labels,
            fps=fps,
            camera=camera,
            files=files,
            scratch=Path(rows),
            spans=spans,
            frame_values=frame_values,
            storage_options=storage_options,
        )
        run = (options, started, workers, executor, lineage, progress, storage_options, proxies)
        groups = split_sources(resolved, known_labels, splits)  # and label names -> ClassLabel
        convert = functools.partial(_convert, run=run)  # (part, root, mode): one root
        return convert_splits(convert, resolved, groups, root, mode, storage_options, started)


def _convert(
    resolved: Resolved, root: str | os.PathLike[str], mode: WriteMode, *, run: tuple
) -> ConversionSummary:
    """Convert ``resolved`` to the one root ``root``; ``run``: ``(options, started, workers,
    executor, lineage, progress, storage_options)`` of :func:`convert_videos`."""
    options: _FrameOptions = run[0]
    started, workers, executor, lineage, progress, storage_options, proxies = run[1:]
    sources, label_names = resolved.sources, resolved.label_names
    for where, reason in resolved.skipped:
        if options.on_error == "raise":
            raise VideoDecodeError(f"cannot convert sample {where!r}: {reason}")

    with _destination(root, mode, storage_options) as (scratch, target):
        duplicates: list[tuple[str, str]] = list(resolved.skipped)
        first_id, first_row = 0, 0
        if target is not None:
            sources, known = _plan_append(sources, target, options, label_names)
            duplicates += known
            first_id, first_row = target.next_id, target.num_rows
        for path, reason in duplicates:
            warnings.warn(f"skipped video {path!r}: {reason}", SkippedVideoWarning, stacklevel=3)
        if target is not None and not sources:
            skips = tuple(SkippedVideo(p, r) for p, r in duplicates)
            return ConversionSummary(target.root, 0, 0, skips, time.perf_counter() - started)
        source_of = {first_id + i: s for i, s in enumerate(sources)}
        threads = encode_threads(options, workers, executor, len(sources))
        tasks = [
            _Task(
                video_id=i,
                file=s.file,
                path=s.path,
                folder=str(scratch),
                options=options,
                checksum=s.checksum,
                encode_threads=threads,
                storage_options=storage_options,
                clip=s.clip,
                source_options=resolved.source_options,
            )
            for i, s in source_of.items()
        ]
        folder = str(scratch) if is_object_store_uri(str(scratch)) else scratch
        results: dict[int, _Result] = {}
        bar = _progress_bar(len(tasks), enabled=progress)
        counts = {"frames": 0, "skipped": 0}
        under_way: dict[int, int] = {}  # frames written so far by the tasks still running

        def show() -> None:
            bar.set_postfix(
                frames=counts["frames"] + sum(under_way.values()), skipped=counts["skipped"]
            )

        def on_progress(video_id: int, frames: int) -> None:
            if video_id not in results and under_way.get(video_id) != frames:
                under_way[video_id] = frames
                show()

        def on_result(result: _Result) -> None:
            results[result.video_id] = result
            under_way.pop(result.video_id, None)
            counts["frames"] += result.num_frames
            if result.skipped is not None:
                counts["skipped"] += 1
                logger.info("skipped %s: %s", source_of[result.video_id].path, result.skipped)
            show()
            bar.update(1)

        try:
            if executor is not None:
                window = _TASKS_PER_WORKER * (workers or _cores())
                submit = functools.partial(executor.submit, _convert_one)
                _run(tasks, submit, window, folder, on_result, on_progress, storage_options)
            elif workers == 0:
                _run(tasks, None, 1, folder, on_result, on_progress, storage_options)
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
                    submit = functools.partial(_submit_to_pool, pool)
                    _run(tasks, submit, window, folder, on_result, on_progress, storage_options)
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        finally:
            bar.close()

        ordered = [results[task.video_id] for task in tasks]
        skipped = tuple(
            SkippedVideo(source_of[r.video_id].path, r.skipped) for r in ordered if r.skipped
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
        fragments = [f for r in converted for f in r.fragments]
        measured = sum(r.frames_measured for r in converted) if options.fidelity else None
        entries = _entries(converted, source_of, first_row)
        check_field_schemas(converted, source_of)
        provenance = {
            "converter": "hf_lvf.convert.convert_videos",
            "fps": None if options.fps is None else float(options.fps),
            **resolved.lineage,
            **dict(lineage or {}),
        }
        if target is not None:
            check_joins(target, converted, entries)
            target.commit(
                fragments,
                entries,
                n_skipped=len(skipped),
                lineage=provenance,
                frames_measured=measured,
            )
        else:
            metadata = {"n_skipped": len(skipped), "lineage": provenance, "measured": measured}
            metadata |= _streams(converted, entries, options, resolved.lineage)
            metadata["header"] = resolved.header
            _write_new_root(
                scratch,
                folder,
                fragments,
                entries,
                options,
                metadata,
                label_names,
                converted[0].schema or FRAME_SCHEMA,
                storage_options,
            )
    for size in proxies:  # the root is complete: each proxy one more atomic version
        add_proxy(root, size, storage_options=storage_options)
    return ConversionSummary(
        root=str(root) if is_object_store_uri(str(root)) else Path(root).absolute(),
        num_videos=len(entries),
        num_frames=sum(e["T"] for e in entries),
        skipped=tuple(SkippedVideo(p, r) for p, r in duplicates) + skipped,
        seconds=time.perf_counter() - started,
    )


def _check_proxies(proxies: Any, mode: str) -> tuple[int, ...]:
    if isinstance(proxies, (str, int)) or not all(
        isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in proxies
    ):
        raise ParameterError(f"proxies must be a list of positive ints (sides), got {proxies!r}")
    if proxies and mode == "append":
        raise ParameterError(
            "proxies= writes proxies into a new root; an appended video would have none: "
            "convert without proxies, or convert to a new root"
        )
    return tuple(proxies)


def _streams(
    converted: list[_Result],
    entries: list[dict[str, Any]],
    options: _FrameOptions,
    lineage: Mapping[str, Any],
) -> dict[str, Any]:
    """``video_column`` and ``streams`` of a new root (a LeRobot root: its first camera, and
    its other cameras as image streams, FORMAT.md); each entry states its streams' sizes
    where they differ from the root's."""
    found: dict[str, Any] = {}
    if lineage.get("source_format") == "lerobot":
        found["video_column"] = lineage.get("camera", "video")
    names = list(converted[0].stream_sizes)
    if names:
        sizes = [r.stream_sizes for r in converted]
        found["streams"], own = stream_entries(
            names, sizes, codec=options.codec, quality=options.quality, lossless=options.lossless
        )
        for entry, differ in zip(entries, own, strict=True):
            if differ:
                entry["streams"] = differ
    return found


def _progress_bar(total: int, *, enabled: bool) -> Any:
    from huggingface_hub.utils import tqdm as hf_tqdm

    return hf_tqdm(total=total, unit="video", desc="Converting videos", disable=not enabled or None)
