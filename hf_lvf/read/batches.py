"""Lance rows -> decoded frames, assembled into the arrays that windows hand out.

A :class:`FrameBatches` belongs to one view. It reads the encoded frames of a
read in one Lance ``take``, decodes each distinct frame once on the decode
threads, keeps the frames of its last read (so that a sequential pass decodes
each frame once, also across reads), and assembles them two ways:

- :meth:`FrameBatches.dense`: ``(n, window_length, H, W, 3)``, writable, every
  window in its own memory; a frame that several windows need is decoded into
  the first place and copied once into each other place.
- :meth:`FrameBatches.start_shared`: the distinct frames in row order (a "strip"),
  and each window a **read-only** view into it, so that no frame is copied per
  window; the strip decodes on the decode threads while the caller hands out the
  windows of the one before.

Reads from several threads at once take turns (a lock around the cache and memory).

The memory of a batch or strip is reused by a later read once nothing refers to
it any more (no window, no array or tensor made from one): fresh memory costs a
page fault per 4 KiB on first write, 10-30 ms per 77 MB here, a sixth to a third
of the time it takes to decode the 512 frames that fill it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ..decode import Decoding, start_decoding
from ..frames import Blobs, FrameField, FrameReader, fields_of, streams_of
from ..layout import RootLayout
from ..plan import Crop

# ================================================================================================
# Lance rows -> decoded frames, assembled into the arrays that windows hand out.
#
# A :class:`FrameBatches` belongs to one view. It reads the encoded frames of a
# read in one Lance ``take``, decodes each distinct frame once on the decode
# threads, keeps the frames of its last read (so that a sequential pass decodes
# each frame once, also across reads), and assembles them two ways:
#
# - :meth:`FrameBatches.dense`: ``(n, window_length, H, W, 3)``, writable, every
#   window in its own memory; a frame that several windows need is decoded into
#   the first place and copied once into each other place.
# - :meth:`FrameBatches.start_shared`: the distinct frames in row order (a "strip"),
#   and each window a **read-only** view into it, so that no frame is copied per
#   window; the strip decodes on the decode threads while the caller hands out the
#   windows of the one before.
#
# Reads from several threads at once take turns (a lock around the cache and memory).
#
# The memory of a batch or strip is reused by a later read once nothing refers to
# it any more (no window, no array or tensor made from one): fresh memory costs a
# page fault per 4 KiB on first write, 10-30 ms per 77 MB here, a sixth to a third
# of the time it takes to decode the 512 frames that fill it.
# ================================================================================================


_EMPTY_ROWS = np.empty(0, np.int64)


# Batches and strips kept for reuse: the one being decoded, the one whose windows are handed
# out, and the one before, free for the next read once its windows are let go (as a training
# loop does, holding on to the last window it was given while the next strip is started).
_RETIRED = 3


# Windows looked at for one strip, at most (bounds the planning work per strip).
_MAX_STRIP_WINDOWS = 1024


def _references(items: list, k: int) -> int:
    return sys.getrefcount(items[k])


# What _references gives for an object that only a list refers to, measured by the same code
# (so that an interpreter that counts references on its stack differently agrees with itself).
_ONLY_LIST = _references([object()], 0)


class FrameBatches:
    """Decoded frames of Lance rows, with the frame cache of one view.

    Args:
        reader: reads the encoded frames.
        layout: the root's video table (for error messages).
        start_rows: ``(num_videos,)`` first Lance row of each video.
        sizes: ``(num_videos, 2)`` ``(H, W)`` each video's frames must decode to.
        out_size: ``(H, W)`` of every output frame (frames of other sizes are resized).
        uri: the root, for error messages.
        threads: decode threads.
        crop: how frames of another size are resized (:func:`hf_lvf.plan.crop_box`).
        decode_scaled: JPEG frames decode DCT-scaled where ``out_size`` allows.
        strip_frames: distinct frames a strip (:meth:`start_shared`) holds, at most as a rule: the
            memory of every strip is that size, so that any strip let go can hold the next.
        streams: the image streams read with the frames (the reader's ``streams``), each
            ``(name, (num_videos, 2) sizes its images must decode to, (H, W) out)``: decoded
            with the frames, on the same threads, handed out as the ``images`` of the
            :class:`RowFields` a read returns, ``{name: windows' images}``. A view with
            streams decodes every frame of each read (no frame is copied from the last).
    """

    def __init__(
        self,
        reader: FrameReader,
        *,
        layout: RootLayout,
        start_rows: np.ndarray,
        sizes: np.ndarray,
        out_size: tuple[int, int],
        uri: str,
        threads: int,
        crop: Crop = "none",
        decode_scaled: bool = True,
        strip_frames: int = 1,
        streams: Sequence[tuple[str, np.ndarray, tuple[int, int]]] = (),
    ):
        self.reader = reader
        self._streams = tuple(streams)
        self.strip_frames = strip_frames
        self._layout = layout
        self._start_rows = start_rows
        self._sizes = sizes
        self._out_size = out_size
        self._uri = uri
        self._threads = threads
        self._crop = crop
        self._decode_scaled = decode_scaled
        # (sorted distinct rows, their frames, read-only): what the last read decoded.
        self._cache: tuple[np.ndarray, np.ndarray | None] = (_EMPTY_ROWS, None)
        self._retired: list[np.ndarray] = []
        self._field_rows = FieldRows(reader)  # field values of the last read's rows
        self._pending: Decoding | _Both | None = None  # the strip being decoded (start_shared)
        # Reads may come from several threads at once (datasets reads shards, and decodes
        # examples, on threads of its own): they take turns with this object's state.
        self._lock = threading.RLock()

    @property
    def frame_bytes(self) -> int:
        height, width = self._out_size
        return height * width * 3

    def dense(
        self, rows: np.ndarray, extra_rows: np.ndarray | None = None, *, fields: bool = True
    ) -> tuple[np.ndarray, RowFields]:
        """The frames of ``rows`` (``(n, window_length)``) as a writable ``(n, window_length,
        H, W, 3)`` array, and the field values of ``rows`` and ``extra_rows`` (any shape),
        read in the same take (``fields=False``: none, no field column read)."""
        height, width = self._out_size
        flat_rows = rows.reshape(-1)
        # Each distinct row is decoded once, straight into the first place the batch needs it
        # (first_pos); the other places of each row get a copy of it (copies[k]), frame by
        # frame: a fancy-indexed copy would first gather every repeat into a temporary.
        unique_rows, first_pos, inverse = np.unique(
            flat_rows, return_index=True, return_inverse=True
        )
        copies: list[list[int]] = [[] for _ in range(len(unique_rows))]
        inverse = inverse.reshape(-1)
        repeats = np.flatnonzero(first_pos[inverse] != np.arange(flat_rows.size))
        for place, k in zip(repeats.tolist(), inverse[repeats].tolist(), strict=True):
            copies[k].append(place)
        with self._lock:
            self.settle()
            self._forget_unless_needed(unique_rows)
            owner = self._recycled(flat_rows.size * self.frame_bytes)
            out = owner[: flat_rows.size * self.frame_bytes].reshape(-1, height, width, 3)
            extra_rows = extra_rows if fields else _EMPTY_ROWS
            images = self._stream_arrays(flat_rows.size)
            decoding, values = self._fill(
                unique_rows, out, first_pos, copies, extra_rows, fields=fields, images=images
            )
            decoding.wait()
            self._retire(owner)
            out = out.reshape(*rows.shape, height, width, 3)
            if images:
                shaped = {name: a.reshape(*rows.shape, *a.shape[1:]) for name, a in images.items()}
                values = RowFields(values.rows, values.values, shaped)
            # A read-only copy, so the cache does not keep the whole batch alive.
            last = out[-1].copy()
            last.flags.writeable = False
            self._cache = (rows[-1].copy(), last)
        return out, values

    def start_shared(self, rows: np.ndarray) -> Callable[[], list[np.ndarray]]:
        """:meth:`start_shared_fields` without the fields."""
        finish = self.start_shared_fields(rows)
        return lambda: finish()[0]

    def start_shared_fields(
        self, rows: np.ndarray, extra_rows: np.ndarray | None = None
    ) -> Callable[[], tuple[list[np.ndarray], RowFields]]:
        """Start reading the frames of ``rows`` (``(n, window_length)``) into one strip of the
        distinct frames, decoded on the decode threads while the caller goes on (hands out
        the windows of the strip before). Returns ``finish()``, which waits for them and
        returns one read-only array per window, a view into the strip wherever the window's
        frames are evenly spaced in it (always, unless frames of other windows fall between
        its own), or raises the decode's error. Any other read of this object waits for the
        decode first."""
        height, width = self._out_size
        strip_rows, inverse = np.unique(rows, return_inverse=True)
        with self._lock:  # the strip being decoded is settled in _fill, once this one is queued
            self._forget_unless_needed(strip_rows)
            owner = self._recycled(max(len(strip_rows), self.strip_frames) * self.frame_bytes)
            strip = owner[: len(strip_rows) * self.frame_bytes].reshape(-1, height, width, 3)
            images = self._stream_arrays(len(strip_rows))
            decoding, fields = self._fill(
                strip_rows, strip, np.arange(len(strip_rows)), extra_rows=extra_rows, images=images
            )
            self._pending, self._cache = decoding, (strip_rows, strip)
            self._retire(owner)

        def finish() -> tuple[list[np.ndarray], RowFields]:
            with self._lock:
                if self._pending is decoding:
                    self.settle()
            decoding.wait()  # raises what decoding raised, whoever settled it
            strip.flags.writeable = owner.flags.writeable = False  # and so every view of them
            positions = inverse.reshape(rows.shape)
            if not images:
                return _views(strip, positions), fields
            shared = {}
            for name, frames in images.items():
                frames.flags.writeable = False
                shared[name] = _views(frames, positions)
            return _views(strip, positions), RowFields(fields.rows, fields.values, shared)

        return finish

    def settle(self) -> None:
        """Wait for the strip being decoded, if any (its errors are raised to whoever reads
        its windows: here, a strip that failed only leaves the cache)."""
        with self._lock:
            decoding, self._pending = self._pending, None
            if decoding is not None:
                try:
                    decoding.wait()
                except Exception:  # noqa: BLE001  (raised again by the strip's finish())
                    self._cache = (_EMPTY_ROWS, None)

    def _stream_arrays(self, n: int) -> dict[str, np.ndarray]:
        """Fresh ``(n, H, W, 3)`` memory for the images of each stream of a read."""
        return {name: np.empty((n, *size, 3), np.uint8) for name, _, size in self._streams}

    def _forget_unless_needed(self, rows: np.ndarray) -> None:
        """Let go of the cache if it holds none of the sorted ``rows`` (a new pass, a random
        read), so that its memory can hold this read."""
        cached_rows = self._cache[0]
        if cached_rows.size and not np.isin(rows, cached_rows, assume_unique=True).any():
            self._cache = (_EMPTY_ROWS, None)

    def _retire(self, owner: np.ndarray) -> None:
        self._retired = [*self._retired[-(_RETIRED - 1) :], owner]

    def _recycled(self, nbytes: int) -> np.ndarray:
        """The memory of an earlier batch or strip of at least ``nbytes`` that nothing refers
        to any more, made writable again; else fresh memory."""
        for k in range(len(self._retired)):
            # Every view of a batch or strip (windows handed out, arrays or tensors made from
            # them, the cache) holds a reference to it: none but the list's means it is free.
            size = self._retired[k].nbytes
            if nbytes <= size <= 2 * nbytes and _references(self._retired, k) == _ONLY_LIST:
                owner = self._retired.pop(k)
                owner.flags.writeable = True
                return owner
        return np.empty(nbytes, np.uint8)

    def _fill(
        self,
        rows: np.ndarray,
        out: np.ndarray,
        targets: np.ndarray,
        copies: list[list[int]] | None = None,
        extra_rows: np.ndarray | None = None,
        *,
        fields: bool = True,
        images: dict[str, np.ndarray] | None = None,
    ) -> tuple[Decoding | _Both, RowFields]:
        """Put the frames of the sorted, distinct ``rows`` into ``out[targets]`` (and
        ``out[copies[k]]``): copied from the cache (what the previous read decoded) where it
        has them, else decoded, on the decode threads: wait for the :class:`Decoding`.

        The new frames' decode is queued first, behind the strip still being decoded, if any
        (so the decode threads go from one strip to the next without a pause); then that
        strip is waited for, and its frames this read shares are copied beside the decode.
        The frames to decode and the field values of ``rows`` and ``extra_rows`` are read in
        one take (:class:`~hf_lvf.read.batches.FieldRows`), and so are the images of each
        stream of ``rows``, decoded into ``images[name][targets]`` (and copies) beside them
        (with streams, every frame is decoded: the cache holds no stream's images)."""
        cached_rows, cached_frames = self._cache
        hit = np.zeros(len(rows), bool)
        if cached_rows.size and not images:
            pos = np.minimum(np.searchsorted(cached_rows, rows), cached_rows.size - 1)
            hit = cached_rows[pos] == rows
        misses = np.flatnonzero(~hit)
        field_rows = rows if extra_rows is None else np.union1d(rows, extra_rows)
        field_rows = field_rows if fields else _EMPTY_ROWS
        blobs, fields = self._field_rows.read(rows[misses], field_rows)
        decoding: Decoding | _Both = self._decode_some(misses, rows, out, targets, copies, blobs)
        for name, sizes, _ in self._streams if images else ():
            stream = self._decode_some(
                misses,
                rows,
                images[name],
                targets,
                copies,
                streams_of(blobs).get(name),
                (name, sizes),
            )
            decoding = _Both(decoding, stream)
        self.settle()
        hits = np.flatnonzero(hit)
        if not hits.size:
            return decoding, fields
        if self._cache[1] is not cached_frames:  # that strip failed: decode its frames here
            return _Both(decoding, self._decode_some(hits, rows, out, targets, copies)), fields
        for k, p in zip(hits.tolist(), pos[hits].tolist(), strict=True):
            for place in [targets[k], *(copies[k] if copies is not None else ())]:
                out[place] = cached_frames[p]
        return decoding, fields

    def _decode_some(
        self,
        some: np.ndarray,
        rows: np.ndarray,
        out: np.ndarray,
        targets: np.ndarray,
        copies: list[list[int]] | None,
        blobs: Sequence[bytes | None] | None = None,
        stream: tuple[str, np.ndarray] | None = None,
    ) -> Decoding:
        """Start decoding ``rows[some]`` into ``out[targets[some]]`` (and their copies);
        ``blobs``: their encoded frames, if read already; ``stream``: ``(name, sizes)`` of the
        stream whose images ``blobs`` are."""
        if not some.size:
            return Decoding([], {})
        some_copies = None if copies is None else [copies[k] for k in some.tolist()]
        return self._decode(rows[some], out, targets[some], some_copies, blobs, stream)

    def decode_rows(
        self,
        rows: np.ndarray,
        reader: FrameReader,
        streams: Sequence[tuple[str, np.ndarray, tuple[int, int]]],
    ) -> list[np.ndarray]:
        """The images of ``rows`` (any shape, repeats allowed) in each column ``reader``
        reads: its frames' column, then its streams (``streams``: each one's name, each
        video's ``(H, W)`` and the size to decode to), each distinct row read once (one take
        for all the columns) and decoded once: ``(*rows.shape, H, W, 3)`` uint8 each."""
        flat = rows.reshape(-1)
        unique, inverse = np.unique(flat, return_inverse=True)
        out = [np.empty((len(unique), *size, 3), np.uint8) for _, _, size in streams]
        if unique.size:
            blobs = reader.read(unique, fields=False)
            columns = [blobs, *(streams_of(blobs)[name] for name, _, _ in streams[1:])]
            targets = np.arange(len(unique))
            decodings = [
                self._decode(unique, decoded, targets, None, column, (name, sizes))
                for decoded, column, (name, sizes, _) in zip(out, columns, streams, strict=True)
            ]
            for decoding in decodings:  # all started, on the same threads; then waited for
                decoding.wait()
        where = inverse.reshape(-1)
        return [d[where].reshape(*rows.shape, *d.shape[1:]) for d in out]

    def _decode(
        self,
        rows: np.ndarray,
        out: np.ndarray,
        targets: np.ndarray,
        copies: list[list[int]] | None,
        blobs: Sequence[bytes | None] | None = None,
        stream: tuple[str, np.ndarray] | None = None,
    ) -> Decoding:
        if blobs is None:
            blobs = self.reader.read(rows)
        row_video = np.searchsorted(self._start_rows, rows, side="right") - 1
        image = "" if stream is None else f"the image of stream {stream[0]!r} of "
        sizes = self._sizes if stream is None else stream[1]

        def describe(k: int) -> str:
            v = int(row_video[k])
            frame_idx = int(rows[k]) - int(self._start_rows[v])
            return (
                f"{image}frame {frame_idx} of video {v} ({self._layout.path(v)!r}, Lance row "
                f"{int(rows[k])}) in root {self._uri!r}"
            )

        return start_decoding(
            blobs,
            out,
            targets,
            expected_sizes=sizes[row_video],
            describe=describe,
            threads=self._threads,
            crop=self._crop,
            copies=copies,
            decode_scaled=self._decode_scaled,
        )


class _Both:
    """Two decodings waited for as one (the first one's error first)."""

    def __init__(self, first: Decoding, second: Decoding):
        self._first, self._second = first, second

    def wait(self) -> None:
        try:
            self._first.wait()
        except Exception:
            with contextlib.suppress(Exception):
                self._second.wait()
            raise
        self._second.wait()


def plan_strips(
    indices: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray], strip_frames: int
) -> Iterator[np.ndarray]:
    """``indices`` (windows in the order read) cut into the runs read as one strip each: the
    first window alone (see :func:`hf_lvf.read.batches.handed_out`), then as many following
    windows as hold at most ``strip_frames`` distinct frames (one at least).

    Args:
        rows_of: ``windows -> (len(windows), window_length)`` their Lance rows.
    """
    # Windows looked at for one strip: each adds a frame at least, unless it repeats one.
    candidates = max(1, min(_MAX_STRIP_WINDOWS, strip_frames))
    if len(indices):  # the first window alone: handed out once its own frames are decoded
        yield indices[:1]
    lo = 1
    while lo < len(indices):
        rows = rows_of(indices[lo : lo + candidates])
        _, first = np.unique(rows.reshape(-1), return_index=True)
        # distinct[b]: distinct frames of windows 0..b.
        distinct = np.cumsum(np.bincount(first // rows.shape[1], minlength=len(rows)))
        hi = lo + max(1, int(np.searchsorted(distinct, strip_frames, "right")))
        yield indices[lo:hi]
        lo = hi


def _views(strip: np.ndarray, positions: np.ndarray) -> list[np.ndarray]:
    """Window ``b``'s frames ``strip[positions[b]]``, read-only: a view wherever they are
    evenly spaced in the strip, else a copy of its own."""
    length = positions.shape[1]
    steps = positions[:, 1] - positions[:, 0] if length > 1 else np.ones(len(positions), np.int64)
    # A window of one frame repeated (a padded 1-frame video) has step 0: no view of that.
    even = (np.diff(positions, axis=1) == steps[:, None]).all(axis=1) & (steps > 0)
    videos = []
    firsts, step_list = positions[:, 0].tolist(), steps.tolist()
    for b, (first, step) in enumerate(zip(firsts, step_list, strict=True)):
        if even[b]:
            videos.append(strip[first : first + (length - 1) * step + 1 : step])
        else:
            video = strip[positions[b]]  # the one copy of this window's frames
            video.flags.writeable = False
            videos.append(video)
    return videos


class ReadAhead:
    """Windows by index for a reader that asks one at a time: when the requests go ``step``
    by ``step`` (a map-style dataset iterated: datasets formats one row at a time), the next
    ``size`` windows are read with the one asked for, in one read; each of them is handed out
    at most once, so writing into one changes nothing handed out later.

    Args:
        read: ``indices -> (len(indices), ...)`` array of those windows.
        num_windows: windows there are.
        size: windows per read when reading ahead.
    """

    def __init__(self, read: Callable[[np.ndarray], np.ndarray], num_windows: int, size: int = 8):
        self._read, self._num_windows, self._size = read, num_windows, size
        self._last: int | None = None
        self._step = 0
        self._first, self._block = 0, None
        self._lock = threading.Lock()  # datasets may decode examples on many threads at once

    def __call__(self, window: int) -> np.ndarray:
        with self._lock:
            return self._window(window)

    def _window(self, window: int) -> np.ndarray:
        last, step, self._last = self._last, self._step, window
        if last is not None and step > 0 and window == last + step:
            block, first = self._block, self._first
            if block is not None and first < window <= first + (len(block) - 1) * step:
                return block[(window - first) // step]
            stop = min(self._num_windows, window + self._size * step)
            self._first, self._block = window, self._read(np.arange(window, stop, step))
            return self._block[0]
        self._step = window - last if last is not None else 0
        self._block = None
        return self._read(np.array([window]))[0]


# ================================================================================================
# Per-frame field values of the rows of a read, carried beside the decoded frames.
#
# A frame read (:mod:`hf_lvf.read.batches`) decodes each distinct frame once and keeps the
# frames of its last read; the field values of the same rows come with the same ``take``
# (:class:`hf_lvf.frames.FrameReader` reads the selected fields with the bytes). A read also
# wants the values of rows it does not decode (a field read at offsets from a window's last
# frame, an action chunk); those rows join the same take. The values of the last read's rows
# are kept, so a sequential pass reads each row's values once, as it decodes each frame once.
# ================================================================================================


class RowFields:
    """Field values of sorted, distinct Lance ``rows``: ``values[name][k]`` is row ``rows[k]``'s
    (``(len(rows), *shape)`` arrays; strings as objects); ``images``: the decoded images of
    each image stream of a read's windows, ``images[name][b]`` window ``b``'s."""

    def __init__(
        self,
        rows: np.ndarray = _EMPTY_ROWS,
        values: dict[str, np.ndarray] | None = None,
        images: dict[str, Any] | None = None,
    ):
        self.rows, self.values = rows, values or {}
        self.images = images or {}

    def at(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """``{name: values of rows}``, each ``(*rows.shape, *shape)``; ``rows`` must be held."""
        if not self.values:
            return {}
        pos = np.searchsorted(self.rows, rows)
        return {name: values[pos] for name, values in self.values.items()}


NO_FIELDS = RowFields()


class FieldRows:
    """The field cache of one view: reads the field values a read needs beside its frames."""

    def __init__(self, reader: FrameReader):
        self._reader = reader
        self._last = NO_FIELDS

    def forget(self) -> None:
        self._last = NO_FIELDS

    def read(
        self, decode_rows: np.ndarray, field_rows: np.ndarray
    ) -> tuple[Sequence[bytes | None], RowFields]:
        """One ``take``: the encoded frames of ``decode_rows`` (sorted, distinct), in order,
        and the field values of the sorted, distinct ``field_rows`` (the rows the read's
        windows use and their offsets), those of the last read's rows not read again."""
        fields: tuple[FrameField, ...] = self._reader.fields
        if not fields or not field_rows.size:  # no field wanted: the take reads no field column
            if not decode_rows.size:
                return [], NO_FIELDS
            if not fields:
                return self._reader.read(decode_rows), NO_FIELDS
            return self._reader.read(decode_rows, fields=False), NO_FIELDS
        known = self._last
        have = np.zeros(len(field_rows), bool)
        pos = np.zeros(len(field_rows), np.int64)
        if known.rows.size and set(known.values) == {f.name for f in fields}:
            pos = np.minimum(np.searchsorted(known.rows, field_rows), known.rows.size - 1)
            have = known.rows[pos] == field_rows
        read_rows = np.union1d(decode_rows, field_rows[~have])
        got: Any = self._reader.read(read_rows) if read_rows.size else []
        picks = np.searchsorted(read_rows, decode_rows).tolist()
        images = {name: [each[i] for i in picks] for name, each in streams_of(got).items()}
        blobs = Blobs([got[i] for i in picks], streams=images)
        fresh = fields_of(got)
        take = np.searchsorted(read_rows, field_rows[~have])
        values = {}
        for field in fields:
            if have.all():
                values[field.name] = known.values[field.name][pos]
                continue
            read = fresh[field.name]
            column = np.empty((len(field_rows), *read.shape[1:]), read.dtype)
            column[~have] = read[take]
            if have.any():
                column[have] = known.values[field.name][pos[have]]
            values[field.name] = column
        self._last = RowFields(field_rows, values)
        return blobs, self._last


# ================================================================================================
# Handing out the windows of a pass strip by strip: each strip's windows while the next one
# decodes, the first window alone and first of all.
# ================================================================================================


T = TypeVar("T")


def handed_out(
    strips: Iterable[np.ndarray],
    start: Callable[[np.ndarray], Callable[[], list[T]]],
    *,
    before_read: Callable[[], None] = lambda: None,
) -> Iterator[T]:
    """The samples of each strip in turn, ``start(strip)`` returning ``finish()`` (their
    samples, once decoded): each strip's samples are handed out while the next one decodes,
    except the first strip's, handed out before the next one starts, so that a pass hands
    out its first window as soon as that window's frames are decoded. ``before_read()``
    comes right before each ``start``, with no ``yield`` between."""
    handing_out: Callable[[], list[T]] | None = None
    for position, strip in enumerate(strips):
        before_read()
        decoding = start(strip)
        yield from handing_out() if handing_out is not None else ()
        handing_out = decoding
        if position == 0:
            yield from decoding()
            handing_out = None
    yield from handing_out() if handing_out is not None else ()


__all__ = ["NO_FIELDS", "FieldRows", "RowFields"]
