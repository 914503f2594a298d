"""The Ray Data datasource of a root's windows: read tasks over contiguous ranges of windows.

Imported only by :mod:`.ray_data` once Ray is known to be installed. Each read task is a
small picklable call over ``(view, start, stop)``: the view travels as its pickle (location,
metadata identity and options; the Lance handle reopens in the worker, once per worker
process), the range as two ints, so planning a million-window root sends nothing per window.
A task reads its range a block at a time, each block one :meth:`VideoWindows.take` (frames
fetched ahead in few Lance requests, a frame shared by overlapping windows decoded once,
straight into the block's memory, which the worker reuses once Ray lets go of the block),
the next block read while Ray takes this one; blocks are one window past Ray's target
block size. Everything a task yields is a function of its arguments, so a task Ray re-runs
after its worker died yields the same blocks, which Ray counts once.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from ray.data import Datasource, ReadTask
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.context import DataContext

from ..plan import window_ranges
from ..read.orders import ShuffledOrder
from ..read.windows import VideoWindows

# Bytes of a window beside its pixels (ints, filename, metadata): for Ray's size estimates.
_ROW_OVERHEAD = 256
# Block bytes where Ray's DataContext sets no target_max_block_size.
_BLOCK_BYTES = 128 * 2**20


class WindowsDatasource(Datasource):
    """The windows of one :class:`~hf_lvf.VideoWindows` view, in ranges cut at video boundaries.

    With ``seed``, the ranges are ranges of positions of the epoch's global order (drawn from
    ``[seed, epoch]``, :class:`~hf_lvf.read.orders.ShuffledOrder`'s): every window exactly once,
    the order of ``safe_dataloader(shuffle=True, seed=seed)`` on any number of ranks.
    """

    def __init__(
        self,
        windows: VideoWindows,
        *,
        seed: int | None = None,
        epoch: int = 0,
        include_paths: bool = False,
        include_text: bool = False,
    ):
        super().__init__()
        self._windows = windows
        self._state = pickle.dumps(windows)
        self._seed = seed
        self._epoch = epoch
        self._strings = Strings(paths=include_paths, text=include_text)
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
        tasks = []
        for start, stop in ranges.tolist():
            # With a seed, start:stop are positions of the epoch's global order (the task
            # computes it from the seed and epoch): no window is sent.
            order = None if self._seed is None else (self._seed, self._epoch)
            read = functools.partial(
                read_range,
                self._state,
                start,
                stop,
                rows_per_block=rows_per_block,
                order=order,
                strings=self._strings,
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
    order: tuple[int, int] | None = None,
    strings: Strings | None = None,
) -> Iterator[pa.Table]:
    """Windows ``start:stop`` of the pickled view ``state``, as Arrow blocks of
    ``rows_per_block`` rows (the last one fewer); with ``order`` (``(seed, epoch)``), the
    windows at positions ``start:stop`` of that epoch's global order, the permutation of
    ``safe_dataloader(shuffle=True, seed=seed)`` (:class:`~hf_lvf.read.orders.ShuffledOrder`);
    string columns as ``strings`` says (default: all of them).

    Each block is one :meth:`VideoWindows.take` of its windows (in an order the view is told,
    so that it fetches the frames of the next ones while it decodes): every distinct frame
    decoded once, straight into the block's memory, and copied to the other windows that
    need it by the thread that decoded it, while it is in that core's cache. The next block
    is read on a thread of its own while Ray stores this one (or runs the ``map_batches``
    fused with the read over it); a frame shared with the block before is decoded once."""
    view = _view(state)
    if stop <= start:
        return
    indices = np.arange(start, stop)
    if order is not None:
        indices = ShuffledOrder(seed=order[0]).global_order(len(view), order[1])[start:stop]
    blocks = [indices[i : i + rows_per_block] for i in range(0, len(indices), rows_per_block)]
    view.expect_order(np.concatenate(blocks))
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="hf_lvf-ray-read") as ahead:
            pending = ahead.submit(view.read_block, blocks[0])
            for following in [*blocks[1:], None]:
                video, samples = pending.result()
                if following is not None:
                    pending = ahead.submit(view.read_block, following)
                block = window_block(view, video, samples, strings)
                del video, samples  # the block alone holds its pixels: reused once Ray lets go
                yield block
    finally:
        view.expect_order(None)


class Strings(NamedTuple):
    """Which string columns a block keeps: ``filename`` (``paths``), the others (``text``:
    string metadata, span captions, string per-frame fields)."""

    paths: bool = True
    text: bool = True

    def keep(self, name: str, value: Any) -> bool:
        if name == "filename":
            return self.paths
        return self.text or not _is_text(value)


def _is_text(value: Any) -> bool:
    """A string, or a list of them (a string per-frame field's value)."""
    return isinstance(value, str) or (
        isinstance(value, list) and any(isinstance(v, str) for v in value)
    )


def window_block(
    view: VideoWindows,
    video: np.ndarray,
    samples: Sequence[dict[str, Any]],
    strings: Strings | None = None,
) -> pa.Table:
    """Samples as one Arrow block: ``video`` (the windows' pixels ``(n, window_length, H, W,
    3)``, which the block views) and every other array key a tensor column, ``video_id`` (the
    Lance rows' id, the key results join on) after ``video_idx``; string columns as
    ``strings`` says (default: all)."""
    strings = strings or Strings()
    columns: dict[str, Any] = {}
    for name, first in samples[0].items():
        if not strings.keep(name, first):
            continue
        values = video if name == "video" else _column([sample[name] for sample in samples])
        columns[name] = values
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


__all__ = ["Strings", "WindowsDatasource", "read_range", "window_block"]
