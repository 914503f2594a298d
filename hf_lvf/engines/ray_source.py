"""The Ray Data datasource of a root's windows: read tasks over contiguous ranges of windows.

Imported only by :mod:`.ray_data` once Ray is known to be installed. Each read task is a
small picklable call over ``(view, start, stop)``: the view travels as its pickle (location,
metadata identity and options; the Lance handle reopens in the worker, once per worker
process), the range as two ints, so planning a million-window root sends nothing per window.
A task reads its range with :meth:`VideoWindows.iter_samples` (frames fetched ahead in few
Lance requests, a frame shared by overlapping windows decoded once) and yields blocks one
window past Ray's target block size, each window copied once, into memory the worker
reuses. Everything a task yields is a function of its arguments, so a task Ray re-runs
after its worker died yields the same blocks, which Ray counts once.
"""

from __future__ import annotations

import functools
import pickle
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.context import DataContext

from ..plan.ranges import window_ranges
from ..read.windows import VideoWindows

# Bytes of a window beside its pixels (ints, filename, metadata): for Ray's size estimates.
_ROW_OVERHEAD = 256
# Block bytes where Ray's DataContext sets no target_max_block_size.
_BLOCK_BYTES = 128 * 2**20
# Pixel buffers a worker process keeps for blocks to come (see _PixelBuffers).
_KEPT_BUFFERS = 2


class WindowsDatasource(Datasource):
    """The windows of one :class:`~hf_lvf.VideoWindows` view, in ranges cut at video boundaries.

    With ``seed``, the ranges are read in an order drawn from ``[seed, epoch]`` and each block's
    rows are permuted too: every window still comes exactly once.
    """

    def __init__(self, windows: VideoWindows, *, seed: int | None = None, epoch: int = 0):
        super().__init__()
        self._windows = windows
        self._state = pickle.dumps(windows)
        self._seed = seed
        self._epoch = epoch
        height, width = windows.frame_size
        self._window_bytes = windows.params.window_length * height * width * 3 + _ROW_OVERHEAD

    def get_name(self) -> str:
        return "VideoWindows"  # Ray shows the operator as ReadVideoWindows

    def estimate_inmemory_data_size(self) -> int:
        return len(self._windows) * self._window_bytes

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: DataContext | None = None,
    ) -> list[ReadTask]:
        context = data_context or DataContext.get_current()
        # One window more than fit in Ray's target block size: each block is past the target
        # on its own, so Ray's read operator hands it on as it is, one Arrow chunk that a
        # consumer sees as numpy without a copy, where blocks under the target are gathered
        # into blocks of many chunks, which iter_batches then copies into one array.
        target = context.target_max_block_size or _BLOCK_BYTES
        rows_per_block = int(target // self._window_bytes) + 1
        bounds = window_ranges(self._windows.plan.first_window, max(1, parallelism))
        ranges = np.stack([bounds[:-1], bounds[1:]], axis=1)
        rng = None
        if self._seed is not None:
            rng = np.random.default_rng([self._seed, self._epoch])
            ranges = ranges[rng.permutation(len(ranges))]
        tasks = []
        for task_seed, (start, stop) in enumerate(ranges.tolist()):
            order = None if rng is None else (self._seed, self._epoch, task_seed)
            read = functools.partial(
                read_range, self._state, start, stop, rows_per_block=rows_per_block, order=order
            )
            metadata = BlockMetadata(
                num_rows=stop - start,
                size_bytes=(stop - start) * self._window_bytes,
                exec_stats=None,
                input_files=None,
            )
            tasks.append(ReadTask(read, metadata, per_task_row_limit=per_task_row_limit))
        return tasks


@functools.lru_cache(maxsize=4)
def _view(state: bytes) -> VideoWindows:
    """The view a task's pickle describes, one per worker process: its Lance handle, frame
    cache and read-ahead threads serve every task of that root the process runs."""
    return pickle.loads(state)


def read_range(
    state: bytes,
    start: int,
    stop: int,
    *,
    rows_per_block: int,
    order: tuple[int, int, int] | None = None,
) -> Iterator[pa.Table]:
    """Windows ``start:stop`` of the pickled view ``state``, as Arrow blocks of
    ``rows_per_block`` rows (the last one fewer); with ``order``, each block's rows in an
    order drawn from it.

    One :meth:`VideoWindows.iter_samples` pass over the range: it decodes the next strip of
    frames while a block is handed to Ray, and decodes a frame shared by two blocks once."""
    view = _view(state)
    rng = None if order is None else np.random.default_rng(list(order))
    capacity = min(rows_per_block, stop - start)
    samples: list[dict[str, Any]] = []
    for sample in view.iter_samples(np.arange(start, stop)):
        samples.append(sample)
        if len(samples) == rows_per_block:
            yield window_block(view, _shuffled(samples, rng), capacity)
            samples = []
    if samples:
        yield window_block(view, _shuffled(samples, rng), capacity)


def _shuffled(samples: list[dict[str, Any]], rng: np.random.Generator | None) -> list:
    return samples if rng is None else [samples[i] for i in rng.permutation(len(samples))]


class _PixelBuffers:
    """The ``video`` arrays of a worker's blocks, each used again for a later block once
    nothing holds it any more (Ray has stored the block it backed, and dropped it).

    A block's tensor column is a view of its array, with no copy, so the array is held as
    long as the block is. Taking an array nothing else holds (its reference count) makes
    reuse safe whatever Ray does with a block; reusing it saves paging in fresh memory for
    each block, which costs about as much as copying the windows into it.
    """

    def __init__(self) -> None:
        self._arrays: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, rows: int, shape: tuple[int, ...], capacity: int) -> np.ndarray:
        """A uint8 array of ``(rows, *shape)``: a view of a kept array of at least that many
        rows that nothing holds, or of a new one of ``capacity`` rows."""
        with self._lock:
            for i in range(len(self._arrays)):
                array = self._arrays[i]
                # 3: the list's reference, ``array`` and getrefcount's argument
                if array.shape[1:] == shape and len(array) >= rows and sys.getrefcount(array) == 3:
                    return array[:rows]
                del array
            array = np.empty((max(rows, capacity), *shape), np.uint8)
            self._arrays = [array, *self._arrays][:_KEPT_BUFFERS]
            return array[:rows]


_buffers = _PixelBuffers()


def window_block(
    view: VideoWindows, samples: Sequence[dict[str, Any]], capacity: int = 0
) -> pa.Table:
    """Samples as one Arrow block: ``video`` (and every other array key) a tensor column,
    ``video_id`` (the Lance rows' id, the key results join on) after ``video_idx``.
    The windows are copied into memory of ``capacity`` windows (or as many as samples) that
    the block views and later blocks of this process reuse."""
    columns: dict[str, Any] = {}
    for name in samples[0]:
        values = [sample[name] for sample in samples]
        if name == "video":
            pixels = _buffers.take(len(values), values[0].shape, capacity)
            columns[name] = np.stack(values, out=pixels)
        else:
            columns[name] = _column(values)
        if name == "video_idx":
            columns["video_id"] = view.layout.ids[np.asarray(values, np.int64)]
    return BlockAccessor.batch_to_block(columns)


def _column(values: list[Any]) -> Any:
    """One key's values as what Ray makes a column of: arrays stacked (a tensor column), lists
    of numbers as a 2-D array, lists of strings (a string per-frame field) as they are."""
    first = values[0]
    if isinstance(first, np.ndarray):
        return np.stack(values)
    if isinstance(first, list) and any(isinstance(v, str) for v in first):
        return pa.array(values)
    return np.asarray(values)


__all__ = ["WindowsDatasource", "read_range", "window_block"]
