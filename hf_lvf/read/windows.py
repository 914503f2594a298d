"""The random-access view: a root as a sequence of fixed-length frame windows.

Every front end (the ``datasets`` builder, the iterable wrapper, the CLI)
reads through :class:`VideoWindows`: metadata -> segment plan -> one Lance
read per batch -> decode each needed frame once -> samples.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..decode import default_decode_threads
from ..errors import ParameterError, ParameterTypeError, UsageError
from ..frames import FrameReader, ReadAheadBudget
from ..frames.ahead import closed_at_exit
from ..layout import RootLayout, VideoInfo, check_frame_pixels, read_layout
from ..location import lance_options, pin_root
from ..plan.segment_plan import SegmentPlan, WindowParams, check_integer
from ..plan.sizes import (
    DEFAULT_MAX_FRAME_PIXELS,
    Crop,
    FrameSizing,
    batch_bytes_problem,
    common_frame_size,
)
from .batches import FrameBatches, ReadAhead, plan_strips
from .field_plan import FieldPlan, FieldSpec
from .field_rows import NO_FIELDS, RowFields
from .orders import GivenOrder, KnownOrder, OrderedReads
from .segments import plan_root, segment_info, window_fields, window_samples
from .strips import handed_out
from .window_reads import WindowReads

if TYPE_CHECKING:
    import datasets

# What a pickled view carries, in the order of VideoWindows._setup's arguments; the layout
# pickles as its location and metadata identity (the table stays in the cache).
_PICKLED = ("layout", "params", "sizing", "storage_options", "decode_threads", "fetch_ahead")
_PICKLED += ("fields", "field_spec")
# hf_lvf.hf.iterable.to_iterable_dataset. That front end sits above this module (it builds on
# datasets' internals), so it installs itself here instead of being imported.
_iterable_front_end: Callable[..., datasets.IterableDataset] | None = None
# Decoded frames one shared read (iter_samples) holds, its windows views into them: enough for
# all decode threads and to amortise a Lance read (160 at 224x224); at HD a span + 8 (below).
_STRIP_BYTES = 24 * 2**20


def install_iterable_front_end(make: Callable[..., datasets.IterableDataset]) -> None:
    """Called by :mod:`hf_lvf.hf.iterable` on import: what ``to_iterable_dataset`` calls."""
    global _iterable_front_end
    _iterable_front_end = make


class VideoWindows(WindowReads):
    """Fixed-length frame windows of a lance-video-frames root, by index.

    Args:
        uri: the root: a local folder, ``hf://datasets/org/repo[/sub]`` or an
            object-store URL lance understands.
        window_length, frame_skip, hop_size, min_video_frames: how windows are cut: see
            :class:`hf_lvf.WindowParams`, where each window option is documented.
        short_videos, fps, windows_in, sampling: window options too: see
            :class:`hf_lvf.WindowParams`.
        frame_size: ``(H, W)`` to resize every frame to on decode; needed when the
            videos that yield windows differ in size.
        crop: ``"none"`` stretches frames to ``frame_size``; ``"center"`` scales them,
            keeping the aspect ratio, to cover ``frame_size``, then cuts out the middle.
        max_frame_pixels: videos declaring larger frames (``H * W``) are refused at
            open, and so is a larger ``frame_size``; default 2**25 (8K UHD fits).
        max_batch_bytes: a read whose decoded frames would need more bytes is refused
            before allocating; default: half the physical memory.
        decode_scaled: JPEG frames read at 1/2, 1/4 or 1/8 of their size or less decode
            DCT-scaled (see :class:`~hf_lvf.plan.sizes.FrameSizing`); ``False``: full decodes.
        storage_options: for object stores, lance's options (``aws_endpoint``,
            ``aws_access_key_id``, ...), used for ``_metadata.json`` too (README).
        revision: for ``hf://`` roots, the branch, tag or commit to read (default: the
            default branch, or ``@rev`` in ``uri``); resolved once to a commit sha that every
            read uses.
        token: for ``hf://`` roots, a Hub token (default: ``HF_TOKEN`` / ``hf auth login``).
        decode_threads: threads that decode a batch; default ``min(4, cores)``.
        read_ahead: the read-ahead of reads in a known order (iter_samples,
            :meth:`expect_order`): a :class:`hf_lvf.ReadAheadBudget` (default 8 reads,
            64 MiB of encoded frames).
        frame_fields: the per-frame fields samples carry, each ``(window_length, *shape)``
            in its own dtype (strings: a list); ``None`` (default): all of the root's.
        frame_offsets, delta_timestamps: ``{field: offsets}`` read at offsets from the
            window's last frame, in frames or seconds (LeRobot's ``delta_timestamps``,
            ``tolerance_s``), clamped to the video, with ``<field>_is_pad``.

    Raises:
        ValueError: a parameter is out of range, no video is long enough for one
            window, or videos differ in size and no ``frame_size`` is given.
        RootNotFoundError, LayoutError: the root is missing or malformed, or declares
            frames above ``max_frame_pixels`` or duplicate video ids.
        HubError: the repo or revision of an ``hf://`` root is missing or not accessible.

    Checks that need the Lance table (row count, schema) run at the first read, in its process.

    Examples:
        >>> w = VideoWindows("clips/", window_length=16, hop_size=4)  # doctest: +SKIP
        >>> sample = w[0]; sample["video"].shape                     # doctest: +SKIP
        (16, 224, 224, 3)
    """

    def __init__(
        self,
        uri: str | Any,
        *,
        window_length: int = 1,
        frame_skip: int = 0,
        hop_size: int = 1,
        min_video_frames: int | None = None,
        frame_size: tuple[int, int] | None = None,
        crop: Crop = "none",
        max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS,
        max_batch_bytes: int | None = None,
        decode_scaled: bool = True,
        storage_options: Mapping[str, str] | None = None,
        decode_threads: int | None = None,
        revision: str | None = None,
        token: str | None = None,
        read_ahead: ReadAheadBudget | None = None,
        short_videos: str = "drop",
        fps: float | None = None,
        windows_in: Literal["videos", "spans"] = "videos",
        sampling: str = "windows",
        frame_fields: Sequence[str] | None = None,
        frame_offsets: Mapping[str, Sequence[int]] | None = None,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        tolerance_s: float = 1e-4,
    ):
        spec = FieldSpec.of(frame_fields, frame_offsets, delta_timestamps, tolerance_s)
        params = WindowParams(
            window_length=window_length,
            frame_skip=frame_skip,
            hop_size=hop_size,
            min_video_frames=min_video_frames,
            short_videos=short_videos,
            fps=fps,
            windows_in=windows_in,
            sampling=sampling,
        )
        sizing = FrameSizing(
            frame_size=frame_size,
            crop=crop,
            max_frame_pixels=max_frame_pixels,
            max_batch_bytes=max_batch_bytes,
            decode_scaled=decode_scaled,
        )
        if decode_threads is not None:
            check_integer("decode_threads", decode_threads, 1)
        uri = str(uri)
        if uri.startswith("hf://"):
            pinned = pin_root(uri, revision=revision, token=token, storage_options=storage_options)
            uri, storage_options = pinned.uri, pinned.storage_options
        elif revision is not None or token is not None:
            raise ParameterError(f"revision= and token= apply to hf:// roots only, got uri {uri!r}")
        layout = read_layout(uri, storage_options=storage_options)
        self._setup(layout, params, sizing, storage_options, decode_threads, read_ahead, None, spec)

    @classmethod
    def from_layout(
        cls,
        layout: RootLayout,
        params: WindowParams,
        *,
        frame_size: tuple[int, int] | None = None,
        sizing: FrameSizing | None = None,
        storage_options: Mapping[str, str] | None = None,
        decode_threads: int | None = None,
        read_ahead: ReadAheadBudget | None = None,
        fields: Mapping[str, str] | None = None,
        field_spec: FieldSpec | None = None,
    ) -> VideoWindows:
        """A view of an already read layout (front ends read it once); ``sizing`` (all size
        options) or ``frame_size`` (only that) sizes frames; ``fields`` types the metadata;
        ``field_spec`` the per-frame fields (:class:`~hf_lvf.read.field_plan.FieldSpec`)."""
        if sizing is not None and frame_size is not None:
            raise ParameterTypeError("pass frame_size= or sizing= (which holds it), not both")
        self = cls.__new__(cls)
        sizing = sizing or FrameSizing(frame_size=frame_size)
        args = (storage_options, decode_threads, read_ahead, fields, field_spec)
        self._setup(layout, params, sizing, *args)
        return self

    def _setup(
        self, layout, params, sizing, storage_options, threads, fetch, fields=None, spec=None
    ) -> None:
        check_frame_pixels(layout, sizing.max_frame_pixels)
        self._fetch_ahead = ReadAheadBudget.of(fetch)
        self._layout = layout
        self._params = params
        self._sizing = sizing
        self._storage_options = lance_options(storage_options)  # also drops datasets' "hf"
        self._decode_threads = threads or default_decode_threads()
        self._plan: SegmentPlan = plan_root(layout, params)
        if len(self._plan) == 0:
            raise ParameterError(
                f"root {layout.uri!r} yields no windows: every video has fewer than "
                f"max(span={params.span}, min_video_frames={params.min_video_frames}) frames "
                f"(longest: {int(layout.num_frames.max())})"
            )
        self._start_rows = layout.start_rows
        self._sizes = layout.frame_sizes
        self._field_spec = spec = spec or FieldSpec()
        self._field_plan = FieldPlan(layout, spec)
        self._fields = window_fields(layout, params, fields)
        frame_size = sizing.frame_size or common_frame_size(
            self._sizes, f"the videos of root {layout.uri!r}", self._plan.windows_per_video > 0
        )
        problem = batch_bytes_problem(params.window_length, *frame_size, sizing.batch_bytes)
        if problem is not None:
            raise ParameterError(f"one window of {layout.uri!r} is too large to read: {problem}")
        self._out_size = frame_size
        frame_bytes = frame_size[0] * frame_size[1] * 3
        # At least 8 new frames past one window's span: a read copies the frames it shares with
        # the previous one (up to a span), which must stay a fraction of what it decodes (HD).
        strip = max(_STRIP_BYTES // frame_bytes, params.span + 8)
        self._frames = FrameBatches(
            FrameReader(layout, self._storage_options, spec.read, spec.offset_keys),
            layout=layout,
            start_rows=self._start_rows,
            sizes=self._sizes,
            out_size=self._out_size,
            uri=self.uri,
            threads=self._decode_threads,
            crop=sizing.crop,
            decode_scaled=sizing.decode_scaled,
            strip_frames=min(strip, sizing.batch_bytes // frame_bytes),
        )
        # For readers that ask row by row: up to 8 windows a read, within a strip's bytes.
        ahead = _STRIP_BYTES // (self._params.window_length * self._frames.frame_bytes)
        self._read_ahead = ReadAhead(self.read_video, len(self), size=max(1, min(8, ahead)))
        reader, fetch_rows = self._frames.reader, self._rows_to_fetch
        self._ordered = OrderedReads(reader, self._plan, self._start_rows, fetch_rows)

    # --- pickling: every parameter travels, the Lance handle and caches do not ---

    def __getstate__(self) -> dict[str, Any]:
        return {key: getattr(self, f"_{key}") for key in _PICKLED} | {"order": self._ordered.order}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(*(state.get(key) for key in _PICKLED))
        self._ordered.order = state.get("order")  # a sampler's order travels to its workers

    @property
    def uri(self) -> str:
        return self._layout.uri

    @property
    def params(self) -> WindowParams:
        return self._params

    @property
    def plan(self) -> SegmentPlan:
        return self._plan

    @property
    def layout(self) -> RootLayout:
        return self._layout

    @property
    def videos(self) -> Sequence[VideoInfo]:
        """The root's entries, in ``video_idx`` order, each made on request (for the
        columns, use :attr:`layout`)."""
        return self._layout.videos

    @property
    def frame_size(self) -> tuple[int, int]:
        """``(H, W)`` of every decoded frame."""
        return self._out_size

    @property
    def metadata_fields(self) -> dict[str, str]:
        """Per-video metadata fields and their ``datasets`` dtypes; a video that lacks one gets
        the placeholder of its dtype (``hf_lvf.MISSING_VALUES``: -1, NaN, "")."""
        return dict(self._fields)

    @property
    def features(self) -> datasets.Features:
        """The ``datasets.Features`` of a sample (missing metadata: see :attr:`metadata_fields`)."""
        return self._field_features(self.base_features)

    def __len__(self) -> int:
        return len(self._plan)

    def __repr__(self) -> str:
        p = self._params
        height, width = self._out_size
        return (
            f"VideoWindows({self.uri!r}, windows={len(self)}, videos={len(self.videos)}, "
            f"window_length={p.window_length}, frame_skip={p.frame_skip}, hop_size={p.hop_size}, "
            f"min_video_frames={p.min_video_frames}, frame_size=({height}, {width})"
            + (f", crop={self._sizing.crop!r})" if self._sizing.crop != "none" else ")")
        )

    def segment_info(self, index: int) -> dict[str, Any]:
        """Which video and frames window ``index`` covers, without reading anything."""
        return segment_info(self._layout, self._plan, index)

    def __getitem__(self, index: int) -> dict[str, Any]:
        if isinstance(index, slice):
            return self.take(range(len(self))[index])
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise ParameterTypeError(f"window index must be an integer or a slice, got {index!r}")
        return self.take([index])[0]

    def take(self, indices: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """Read windows ``indices`` with one Lance read and one decode per distinct frame.

        Returns:
            One sample dict per index, in order.

        Raises:
            IndexError: an index is out of range.
            FrameDecodeError: a frame is corrupt, not WebP, or of the wrong size.
            ForkSafetyError: this process is a fork of one that used lance.
        """
        return self._take_block(indices)[1]

    def expect_order(self, order: Sequence[int] | np.ndarray | KnownOrder | None) -> None:
        """The order :meth:`take` (a DataLoader's ``__getitems__``) is asked for windows in: in
        batches of the first one's size, each DataLoader worker every ``num_workers``-th. A take
        in that order fetches the frames of the next ones (``read_ahead``) while it decodes;
        one out of order reads as ever; ``None`` forgets it (see :mod:`hf_lvf.read.orders`)."""
        if order is not None and not hasattr(order, "epoch_order"):
            order = GivenOrder(self._plan.normalize(np.asarray(order).reshape(-1)))
        self._ordered.expect(order)

    def _samples(self, *columns: Any, values: RowFields = NO_FIELDS) -> list[dict[str, Any]]:
        """Sample dicts of ``(idx, video_idx, start_frame, frame_indices, video)``, where
        ``video[b]`` is the value of sample ``b``'s ``video`` (pixels here, a reference in
        the map-style builder): :func:`hf_lvf.read.segments.window_samples` of this root,
        with the per-frame fields of ``values``."""
        samples = window_samples(self._layout, self._plan, self._fields, *columns)
        return self._with_fields(samples, columns[1], columns[3], values)

    __getitems__ = take  # what torch's DataLoader calls with a batch of indices

    def read_video(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Only the pixels: ``(len(indices), window_length, H, W, 3)`` uint8."""
        idx = self._plan.normalize(np.asarray(indices).reshape(-1))
        return self._read(idx)[0]

    @closed_at_exit  # a pass left open at exit ends before the interpreter's teardown
    def iter_samples(
        self, indices: Sequence[int] | np.ndarray | None = None, *, batch_size: int = 8
    ) -> Iterator[dict[str, Any]]:
        """Yield the samples of ``indices`` (default: all, in order).

        A read takes as many following windows as fit in 24 MiB of decoded frames, or
        in a span and 8 frames where that is more (HD), and in ``max_batch_bytes``;
        ``batch_size`` or more wherever that many fit. Windows that share frames
        (``hop_size`` < span) are read together, each distinct frame decoded once, the
        new frames of all of them on all decode threads at once, also across reads.
        The frames of the coming reads are fetched while one decodes (``read_ahead``),
        and the next read decodes while the windows of one are handed out. The first
        window is read alone, handed out as soon as its own frames are decoded.

        The ``video`` arrays yielded here are **read-only** and may share memory:
        a window is a view into the strip of decoded frames it was read with,
        so that no frame is copied per window. Writing into one raises
        ``ValueError``; ``np.array(sample["video"])`` gives a private, writable copy.
        (:meth:`take` returns writable arrays of their own.)
        """
        check_integer("batch_size", batch_size, 1)
        if indices is None:
            indices = np.arange(len(self), dtype=np.int64)
        indices = self._plan.normalize(np.asarray(indices).reshape(-1))
        strips, strips_to_fetch = itertools.tee(
            plan_strips(indices, lambda idx: self._rows(idx)[3], self._frames.strip_frames)
        )
        rows = self._rows_to_fetch(strips_to_fetch)
        with self._frames.reader.reading_ahead(rows, self._fetch_ahead) as next_strip:
            try:  # next_strip() right before each strip's read: it reads what was fetched
                yield from handed_out(strips, self._take_shared, before_read=next_strip)
            finally:
                self._frames.settle()  # a pass left early: its decode ends with it

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_samples()

    def to_iterable_dataset(
        self, shuffle: bool = False, seed: int | None = None, num_shards: int | None = None, **clips
    ) -> datasets.IterableDataset:
        """These windows as a ``datasets.IterableDataset`` with the same :attr:`features`.

        Args:
            shuffle: read in a full permutation of all windows, a new one each epoch
                (``set_epoch``), instead of in order.
            seed: seed of the permutation; the same ``(seed, epoch)`` gives the same order.
            num_shards: contiguous slices of the order handed to DataLoader workers and
                nodes; default: a power of two up to 64 with >= 8 windows each.
            **clips: ``clips_per_video=``, ``clip_sampling=``, ``clip_seed=``: see ``ClipSampler``.
        """
        if _iterable_front_end is None:  # installed once this module is (hf_lvf._registration)
            raise UsageError("import hf_lvf to use to_iterable_dataset")
        return _iterable_front_end(self, shuffle=shuffle, seed=seed, num_shards=num_shards, **clips)
