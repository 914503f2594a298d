"""Ray: a root's windows as a ``ray.data.Dataset``, per-frame results as rows to write back,
and the executor ``convert_videos`` runs on a Ray cluster with.

Ray is imported when one of these is called, with an install hint if it is missing; importing
:mod:`hf_lvf` never imports it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..errors import MissingDependencyError, ParameterError, ParameterTypeError, UsageError
from ..layout import read_layout
from ..plan import check_integer
from ..read.windows import VideoWindows

if TYPE_CHECKING:
    import ray.data

# Windows a read task covers by default. Each task costs Ray Data about 45 ms beyond its
# reads (measured on 2 CPUs: 8 tasks over 582 windows of 224x224 took 1.14 s, 2 tasks 0.83 s)
# and re-decodes the (span - hop) frames its first window shares with the range before it;
# a task's decode threads use every core of its node, so one task per CPU keeps all busy.
_WINDOWS_PER_TASK = 1024


def _import_ray(what: str) -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise MissingDependencyError(f"{what} needs Ray Data: pip install 'hf-lvf[ray]'") from err
    return ray


def read_windows(
    uri: str | os.PathLike[str] | VideoWindows,
    *,
    seed: int | None = None,
    epoch: int = 0,
    include_paths: bool = False,
    include_text: bool = False,
    override_num_blocks: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: Mapping[str, Any] | None = None,
    **options: Any,
) -> ray.data.Dataset:
    """The windows of a root as a ``ray.data.Dataset``, one row per window.

    The root's metadata is read here; nothing is decoded until the dataset runs. Each read
    task covers a contiguous range of windows, cut at video boundaries where the ranges allow,
    and reads it as :meth:`VideoWindows.iter_samples` does: frames fetched in few Lance
    requests, a frame shared by overlapping windows decoded once. A task Ray re-runs (its
    worker died, or a fault its ``retry_exceptions`` names) yields the same rows again, which
    Ray counts once.

    Columns, in the order of a sample's keys: ``video`` (a uint8 tensor column of shape
    ``(window_length, H, W, 3)``), ``video_idx``, ``video_id`` (the Lance rows' id: with
    ``frame_indices``, what per-frame results join on, see :func:`frame_table`),
    ``start_frame``, ``frame_indices``, ``sample_idx``, then every other key of the samples
    that is not a string (metadata fields; per-frame fields as tensor columns). As Ray's own
    datasources do (``read_images(include_paths=...)``), string columns are left out unless
    asked for, so that ``iter_torch_batches()`` works on the dataset as it is: strings make
    no tensors. ``include_paths=True`` adds ``filename`` (after ``video_id``),
    ``include_text=True`` the other strings (string metadata such as ``split``, span
    ``caption``, string per-frame fields as lists); drop them again
    (``ds.drop_columns(["filename"])``) before ``iter_torch_batches``.

    Args:
        uri: the root (local folder, ``hf://datasets/...`` or an object-store URL), or a
            :class:`~hf_lvf.VideoWindows` to read as it is (then no ``options``).
        seed: read the epoch's global order (:mod:`hf_lvf.plan.elastic`): the permutation
            drawn from ``[seed, epoch]``, that of ``safe_dataloader(shuffle=True, seed=seed)``
            and of a DDP job on any number of ranks; each read task a contiguous part of it
            (with ``DataContext.execution_options.preserve_order``, the rows in that order).
            Every window exactly once, in a new order per ``epoch``; windows far apart share
            no frames, so a task decodes more than in file order.
            ``Dataset.randomize_block_order()`` is Ray's own, coarser shuffle.
        epoch: the epoch of ``seed``'s order.
        include_paths: keep the ``filename`` column (a string: no tensor).
        include_text: keep the other string columns (metadata, captions, per-frame fields).
        override_num_blocks: read tasks to cut the windows into (at most one per window);
            default: one per 1,024 windows, at least one per CPU of the cluster.
        concurrency: read tasks that run at once (Ray's ``concurrency``).
        ray_remote_args: Ray's options of the read tasks (``num_cpus``, ``max_retries``,
            ``retry_exceptions``, ...).
        **options: the options of :class:`~hf_lvf.VideoWindows` (``window_length``,
            ``hop_size``, ``frame_size``, ``crop``, ``storage_options``, ``revision``,
            ``token``, ...); ``decode_threads`` and ``fetch_ahead`` apply in each task.

    Returns:
        A lazy ``ray.data.Dataset``.

    Raises:
        ImportError: Ray Data is not installed.
        ValueError, TypeError: an option is out of range or unknown, or options beside a view.
        RootNotFoundError, LayoutError, HubError: as :class:`~hf_lvf.VideoWindows`.

    Examples:
        >>> ds = read_windows("clips_root", window_length=8, hop_size=4)  # doctest: +SKIP
        >>> next(ds.iter_torch_batches(batch_size=2))["video"].shape  # doctest: +SKIP
        torch.Size([2, 8, 64, 64, 3])
    """
    ray = _import_ray("read_windows")
    if seed is not None:
        check_integer("seed", seed, 0)
    check_integer("epoch", epoch, 0)
    for name, flag in (("include_paths", include_paths), ("include_text", include_text)):
        if not isinstance(flag, bool):
            raise ParameterTypeError(f"{name} must be True or False, got {flag!r:.80}")
    if override_num_blocks is not None:
        check_integer("override_num_blocks", override_num_blocks, 1)
    if concurrency is not None:
        check_integer("concurrency", concurrency, 1)
    if isinstance(uri, VideoWindows):
        if options:
            raise ParameterTypeError(
                f"read_windows of a VideoWindows takes no view options, got {sorted(options)}"
            )
        windows = uri
    else:
        uri = os.fspath(uri)
        if "://" not in uri:  # Ray's workers run in other folders
            uri = os.path.abspath(uri)
        windows = VideoWindows(uri, **options)
    from .ray_source import WindowsDatasource

    if override_num_blocks is None:
        cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
        wanted = max(math.ceil(len(windows) / _WINDOWS_PER_TASK), cpus)
        override_num_blocks = min(len(windows), wanted)
    return ray.data.read_datasource(
        WindowsDatasource(
            windows,
            seed=seed,
            epoch=epoch,
            include_paths=include_paths,
            include_text=include_text,
        ),
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=dict(ray_remote_args or {}),
    )


def frame_table(
    dataset: Any,
    columns: Sequence[str],
    *,
    root: str | os.PathLike[str] | None = None,
    fill: Any = None,
    storage_options: Mapping[str, str] | None = None,
) -> pa.Table:
    """Results of a window dataset as one row per frame: ``video_id``, ``frame_idx`` and
    ``columns``, the table :func:`~hf_lvf.write.add_frame_columns` joins on ``(video_id,
    frame_idx)``.

    A column whose values have ``window_length`` rows (one per frame of the window) gives each
    frame its own; any other value (a score or an embedding per window) goes to every frame of
    its window. A frame in several windows (``hop_size`` < span) takes the value of the window
    with the lowest ``sample_idx``, so the result does not depend on the order Ray ran in.

    Args:
        dataset: a ``ray.data.Dataset`` of rows of :func:`read_windows` (after ``map_batches``,
            ``filter``, ...) that kept ``video_id``, ``frame_indices`` and ``sample_idx``.
        columns: the result columns to carry.
        root: with it, one row for every frame of that root, in its row order (what
            ``add_frame_columns`` needs): frames in no window of ``dataset`` get ``fill``.
            Without it, the frames of the windows, sorted by ``(video_id, frame_idx)``.
        fill: the value of frames in no window (``root`` only); ``None``: there must be none.
        storage_options: for a ``root`` on an object store.

    Returns:
        A ``pyarrow.Table``.

    Raises:
        ImportError: Ray Data is not installed.
        ValueError: ``columns`` is empty or names a key; a key column is missing; a row names
            a frame ``root`` lacks; with ``root`` and no ``fill``, a frame in no window.
        TypeError: ``dataset`` is not a Ray Dataset.

    Examples:
        >>> scores = frame_table(scored, ["score"], root="clips_root", fill=0.0)  # doctest: +SKIP
        >>> scores.column_names  # doctest: +SKIP
        ['video_id', 'frame_idx', 'score']
    """
    ray = _import_ray("frame_table")
    if not isinstance(dataset, ray.data.Dataset):
        raise ParameterTypeError(f"dataset must be a ray.data.Dataset, got {dataset!r:.80}")
    keys = ["video_id", "frame_indices", "sample_idx"]
    columns = list(columns)
    if not columns or set(columns) & {*keys, "frame_idx"}:
        raise ParameterError(f"columns must name result columns besides the keys, got {columns!r}")
    missing = [name for name in keys + columns if name not in dataset.schema().names]
    if missing:
        raise ParameterError(
            f"the dataset has no column {missing[0]!r}; keep {keys} beside results"
        )
    parts = ray.get(dataset.select_columns(keys + columns).to_arrow_refs())
    table = pa.concat_tables([p for p in parts if p.num_rows]).combine_chunks()
    frames = np.asarray(_numpy(table.column("frame_indices")), np.int64)
    window_length = frames.shape[1]
    first = np.argsort(_numpy(table.column("sample_idx")), kind="stable")
    video_id = np.repeat(_numpy(table.column("video_id")).astype(np.int64)[first], window_length)
    frame_idx = frames[first].reshape(-1)
    _, keep = np.unique((video_id << 32) | frame_idx, return_index=True)  # first window's
    video_id, frame_idx = video_id[keep], frame_idx[keep]
    values = {}
    for name in columns:
        column = _numpy(table.column(name))[first]
        if column.ndim >= 2 and column.shape[1] == window_length:  # one value per frame
            column = column.reshape(-1, *column.shape[2:])
        else:
            column = np.repeat(column, window_length, axis=0)
        values[name] = column[keep]
    if root is None:
        out = {"video_id": video_id, "frame_idx": frame_idx, **values}
        return pa.table({k: _arrow(v) for k, v in out.items()} | _key_types(out))
    layout = read_layout(os.fspath(root), storage_options=storage_options)
    ids, counts = layout.ids.astype(np.int64), layout.num_frames.astype(np.int64)
    by_id = np.argsort(ids, kind="stable")
    video = by_id[np.clip(np.searchsorted(ids[by_id], video_id), 0, len(ids) - 1)]
    bad = np.flatnonzero((ids[video] != video_id) | (frame_idx >= counts[video]))
    if bad.size:
        k = int(bad[0])
        raise ParameterError(
            f"the dataset has frame {int(frame_idx[k])} of video_id {int(video_id[k])}, which "
            f"root {os.fspath(root)!r} does not have"
        )
    offsets = np.concatenate([[0], np.cumsum(counts)])
    rows = offsets[video] + frame_idx
    covered = np.zeros(int(offsets[-1]), bool)
    covered[rows] = True
    if fill is None and not covered.all():
        row = int(np.flatnonzero(~covered)[0])
        v = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ParameterError(
            f"frame {row - int(offsets[v])} of video_id {int(ids[v])} ({layout.path(v)!r}) is "
            "in no window of the dataset: give fill= for such frames"
        )
    out = {
        "video_id": np.repeat(ids, counts),
        "frame_idx": np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], counts),
    }
    for name, column in values.items():
        full = np.full((int(offsets[-1]), *column.shape[1:]), fill, dtype=column.dtype)
        full[rows] = column
        out[name] = full
    return pa.table({k: _arrow(v) for k, v in out.items()} | _key_types(out))


def _key_types(out: Mapping[str, np.ndarray]) -> dict[str, pa.Array]:
    """``video_id`` and ``frame_idx`` as int32, their type in the frame rows."""
    return {key: pa.array(out[key].astype(np.int32)) for key in ("video_id", "frame_idx")}


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A column (tensor columns too) as one numpy array."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if hasattr(array, "to_numpy_ndarray"):  # Ray's tensor extension arrays
        return array.to_numpy_ndarray()
    return np.asarray(array.to_numpy(zero_copy_only=False))


def _arrow(values: np.ndarray) -> pa.Array:
    """Values per frame as a column: scalars as they are, rows of shape ``s`` as fixed-size
    lists (of lists), what Lance stores a per-frame vector or tensor as."""
    if values.ndim == 1:
        return pa.array(values)
    array = pa.array(np.ascontiguousarray(values).reshape(-1))
    for size in reversed(values.shape[1:]):
        array = pa.FixedSizeListArray.from_arrays(array, size)
    return array


class RayExecutor(Executor):
    """A ``concurrent.futures.Executor`` over Ray remote tasks: ``convert_videos`` runs on a
    Ray cluster by the route it takes on Dask, ``executor=RayExecutor()``.

    Each ``submit`` is one remote task; its future is running from the start (as a process
    pool's are once picked up), so a conversion cancelled on error waits for the tasks under
    way, which stop at their next batch of frames, and nothing is left writing.

    Args:
        num_cpus: CPUs each task reserves (default 1).
        max_retries: times Ray re-runs a task whose worker died (Ray's default 3). A re-run
            conversion task writes its video again; what the dead one wrote is never committed.
        **ray_remote_args: other Ray task options (``resources``, ``runtime_env``, ...).

    Raises:
        ImportError: Ray is not installed.

    Examples:
        >>> convert_videos("videos/", "root", executor=RayExecutor())  # doctest: +SKIP
    """

    def __init__(self, *, num_cpus: float = 1, max_retries: int = 3, **ray_remote_args: Any):
        ray = _import_ray("RayExecutor")
        check_integer("max_retries", max_retries, -1)
        options = {"num_cpus": num_cpus, "max_retries": max_retries, **ray_remote_args}
        self._remote = ray.remote(_call).options(**options)
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._shut:
            raise UsageError("cannot submit to a RayExecutor after shutdown")
        ref = self._remote.remote(fn, args, kwargs)
        future: Future = Future()
        future.set_running_or_notify_cancel()
        ref.future().add_done_callback(lambda done: _settle(future, done))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._shut = True  # the cluster is the caller's: it stays up


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


def _settle(future: Future, done: Future) -> None:
    """Hand a remote task's outcome to ``future``: the task's own exception (Ray's wrapper is
    also an instance of it; the cause itself is raised, as a local call would)."""
    error = done.exception()
    if error is None:
        future.set_result(done.result())
        return
    cause = getattr(error, "cause", None)
    future.set_exception(cause if isinstance(cause, BaseException) else error)


__all__ = ["RayExecutor", "frame_table", "read_windows"]
