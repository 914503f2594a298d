"""The random-access view: a root as a sequence of fixed-length frame windows.

Every front end (the ``datasets`` builder, the iterable wrapper, the CLI)
reads through :class:`VideoWindows`: metadata -> segment plan -> one Lance
read per batch -> decode each needed frame once -> samples.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..decode import default_decode_threads
from ..errors import LayoutError, ParameterError, ParameterTypeError, UsageError
from ..frames import FrameReader, ReadAheadBudget, closed_at_exit
from ..layout import RootLayout, VideoInfo, check_frame_pixels, read_layout
from ..layout.image_streams import main_camera
from ..location import lance_options, pin_root
from ..plan import (
    DEFAULT_MAX_FRAME_PIXELS,
    Crop,
    FrameSizing,
    WindowParams,
    WindowPlan,
    batch_bytes_problem,
    check_integer,
    common_frame_size,
)
from ..processes import check_fork_safe
from .batches import NO_FIELDS, FrameBatches, ReadAhead, RowFields, handed_out, plan_strips
from .orders import GivenOrder, KnownOrder, OrderedReads
from .samples import FieldPlan, FieldSpec, plan_root, segment_info, window_fields, window_samples

# ================================================================================================
# How a :class:`~hf_lvf.read.windows.VideoWindows` reads windows: their rows, one dense read
# or a shared strip, and the per-frame fields that come with them (in the same take).
# ================================================================================================


if TYPE_CHECKING:
    import datasets

    from ..frames import FrameField


# ================================================================================================
# The random-access view: a root as a sequence of fixed-length frame windows.
#
# Every front end (the ``datasets`` builder, the iterable wrapper, the CLI)
# reads through :class:`VideoWindows`: metadata -> segment plan -> one Lance
# read per batch -> decode each needed frame once -> samples.
# ================================================================================================


# What a pickled view carries, in the order of VideoWindows._setup's arguments; the layout
# pickles as its location and metadata identity (the table stays in the cache).
_PICKLED = ("layout", "params", "sizing", "storage_options", "decode_threads", "fetch_ahead")


_PICKLED += ("fields", "field_spec", "stream_selection")


# hf_lvf.hf.iterable.to_iterable_dataset. That front end sits above this module (it builds on
# datasets' internals), so it installs itself here instead of being imported.
_iterable_front_end: Callable[..., datasets.IterableDataset] | None = None


# Decoded frames one shared read (iter_samples) holds, its windows views into them: enough for
# all decode threads and to amortise a Lance read (160 at 224x224); at HD a span + 8 (below).
_STRIP_BYTES = 24 * 2**20


def has_iterable_front_end() -> bool:
    """Whether a front end gave :meth:`VideoWindows.to_iterable_dataset` its function."""
    return _iterable_front_end is not None


def install_iterable_front_end(make: Callable[..., datasets.IterableDataset]) -> None:
    """Called by :mod:`hf_lvf.hf.iterable` on import: what ``to_iterable_dataset`` calls."""
    global _iterable_front_end
    _iterable_front_end = make


class VideoWindows:
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
            DCT-scaled (see :class:`~hf_lvf.plan.FrameSizing`); ``False``: full decodes.
        proxies: a ``frame_size`` that a proxy stream covers reads and decodes the smallest
            such proxy instead of the full frames (:attr:`images` says which); ``False``:
            always the full frames; a proxy's name (``"proxy_224"``): always that proxy, at
            ``frame_size`` or its own size (see :class:`~hf_lvf.plan.FrameSizing`).
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
            ``tolerance_s``), clamped to the video, with ``<field>_is_pad``; a key may be an
            image stream (a camera): its images at the offsets, ``(K, H, W, 3)``, read in a
            take of their own.
        streams: the image streams samples carry (FORMAT.md, "Image streams": a root's
            other cameras), each under its name, ``(window_length, H, W, 3)`` uint8 RGB at
            ``frame_indices``, read in the same take as ``video`` and decoded with it,
            at ``frame_size`` if given, else at the stream's own size; ``None`` (default):
            every stream but proxies; ``[]``: none (their columns are not read).

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
        proxies: bool | str = True,
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
        streams: Sequence[str] | None = None,
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
            proxies=proxies,
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
        self._setup(
            layout,
            params,
            sizing,
            storage_options,
            decode_threads,
            read_ahead,
            None,
            spec,
            streams,
        )

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
        streams: Sequence[str] | None = None,
    ) -> VideoWindows:
        """A view of an already read layout (front ends read it once); ``sizing`` (all size
        options) or ``frame_size`` (only that) sizes frames; ``fields`` types the metadata;
        ``field_spec`` the per-frame fields (:class:`~hf_lvf.read.samples.FieldSpec`);
        ``streams`` the image streams samples carry (``None``: every one but proxies)."""
        if sizing is not None and frame_size is not None:
            raise ParameterTypeError("pass frame_size= or sizing= (which holds it), not both")
        self = cls.__new__(cls)
        sizing = sizing or FrameSizing(frame_size=frame_size)
        args = (storage_options, decode_threads, read_ahead, fields, field_spec, streams)
        self._setup(layout, params, sizing, *args)
        return self

    def _setup(
        self,
        layout,
        params,
        sizing,
        storage_options,
        threads,
        fetch,
        fields=None,
        spec=None,
        streams=None,
    ) -> None:
        check_frame_pixels(layout, sizing.max_frame_pixels)
        self._fetch_ahead = ReadAheadBudget.of(fetch)
        self._layout = layout
        self._params = params
        self._sizing = sizing
        self._storage_options = lance_options(storage_options)  # also drops datasets' "hf"
        self._decode_threads = threads or default_decode_threads()
        self._plan: WindowPlan = plan_root(layout, params)
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
        self._images, self._image_sizes = self._serving(layout, sizing)
        frame_size = sizing.frame_size or common_frame_size(
            self._image_sizes,
            f"the videos of root {layout.uri!r}"
            + ("" if self._images == "bytes" else f" in stream {self._images!r}"),
            self._plan.windows_per_video > 0,
        )
        problem = batch_bytes_problem(params.window_length, *frame_size, sizing.batch_bytes)
        if problem is not None:
            raise ParameterError(f"one window of {layout.uri!r} is too large to read: {problem}")
        self._out_size = frame_size
        self._stream_selection = None if streams is None else tuple(streams)
        every = self._sample_streams(layout, sizing, streams)
        # Streams named in frame_offsets= / delta_timestamps= are read at those offsets
        # (``(K, H, W, 3)`` and ``<name>_is_pad``), the others at the window's frames.
        self._streams = tuple(s for s in every if s[0] not in spec.offset_keys)
        self._offset_streams = tuple(s for s in every if s[0] in spec.offset_keys)
        self._offset_groups = self._group_offset_streams()
        self._stream_readers: dict[tuple[str, ...], FrameReader] = {}
        sizes = self._image_sizes
        frame_bytes = frame_size[0] * frame_size[1] * 3
        # At least 8 new frames past one window's span: a read copies the frames it shares with
        # the previous one (up to a span), which must stay a fraction of what it decodes (HD).
        strip = max(_STRIP_BYTES // frame_bytes, params.span + 8)
        self._frames = FrameBatches(
            FrameReader(
                layout,
                self._storage_options,
                self._field_names(spec.read),
                self._field_names(spec.offset_keys),
                streams=[name for name, _, _ in self._streams],
                images=self._images,
            ),
            layout=layout,
            start_rows=self._start_rows,
            sizes=sizes,
            out_size=self._out_size,
            uri=self.uri,
            threads=self._decode_threads,
            crop=sizing.crop,
            decode_scaled=sizing.decode_scaled,
            strip_frames=min(strip, sizing.batch_bytes // frame_bytes),
            streams=self._streams,
        )
        # For readers that ask row by row: up to 8 windows a read, within a strip's bytes.
        ahead = _STRIP_BYTES // (self._params.window_length * self._frames.frame_bytes)
        self._windows_ahead = ReadAhead(self.read_video, len(self), size=max(1, min(8, ahead)))
        reader, fetch_rows = self._frames.reader, self._rows_to_fetch
        self._ordered = OrderedReads(reader, self._plan, self._start_rows, fetch_rows)

    def _field_names(self, names: Sequence[str] | None) -> tuple[str, ...] | None:
        """``names`` less the image streams read at offsets (they are no per-frame field)."""
        if names is None:
            return None
        return tuple(n for n in names if n not in {s[0] for s in self._offset_streams})

    def _group_offset_streams(self) -> tuple[tuple[tuple[str, ...], tuple[Any, ...]], ...]:
        """The image streams read at offsets, grouped by their offsets: streams at the same
        offsets (LeRobot's cameras at one set of ``delta_timestamps``) reach the same rows,
        read in one take of their columns. Each group is ``(its columns, its streams)``, the
        main camera first: its column is ``video``'s (``bytes`` or its proxy), the reader's
        frames' column; the others' are their names, the reader's streams."""
        main = main_camera(self._layout.header)
        groups: list[list[Any]] = []
        for stream in self._offset_streams:
            offsets = self._field_plan.offsets[stream[0]]
            same = (g for g in groups if np.array_equal(self._field_plan.offsets[g[0][0]], offsets))
            group = next(same, None)
            if group is None:
                groups.append([stream])
            else:
                group.append(stream)
        out = []
        for group in groups:
            group.sort(key=lambda stream: stream[0] != main)
            columns = tuple(self._images if s[0] == main else s[0] for s in group)
            out.append((columns, tuple(group)))
        return tuple(out)

    def _streams_at_offsets(
        self, video_idx: np.ndarray, frame_indices: np.ndarray
    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{name: (images, is_pad)}`` of each image stream read at offsets: ``(n, K, H, W,
        3)`` and ``(n, K)``, its images at each window's offset frames (clamped, as LeRobot
        pads), a group of streams at the same offsets read in one take and decoded on the
        same threads (:meth:`_group_offset_streams`)."""
        out = {}
        for columns, group in self._offset_groups:
            frames, is_pad = self._field_plan.offset_frames(group[0][0], video_idx, frame_indices)
            rows = self._start_rows[video_idx][:, None] + frames
            reader = self._stream_readers.get(columns)
            if reader is None:
                reader = self._stream_readers[columns] = FrameReader(
                    self._layout, self._storage_options, (), images=columns[0], streams=columns[1:]
                )
            images = self._frames.decode_rows(rows, reader, group)
            for (name, _, _), each in zip(group, images, strict=True):
                out[name] = (each, is_pad)
        return {name: out[name] for name, _, _ in self._offset_streams}

    def _serving(self, layout: RootLayout, sizing: FrameSizing) -> tuple[str, np.ndarray]:
        """The column the frames are read from and each video's ``(H, W)`` in it: the
        smallest proxy that covers ``frame_size`` (FrameSizing's ``proxies``), else
        ``bytes``; ``proxies=<name>``: that proxy.

        Raises:
            ValueError: ``proxies`` names no proxy stream of the root.
        """
        from ..layout.image_streams import root_streams, serving_proxy

        if isinstance(sizing.proxies, str):
            every = root_streams(layout)
            forced = every.get(sizing.proxies)
            if forced is None or forced.proxy_of != "bytes":
                have = sorted(n for n, s in every.items() if s.proxy_of == "bytes")
                raise ParameterError(
                    f"proxies={sizing.proxies!r}: root {layout.uri!r} has no proxy stream of "
                    f"that name; its proxies: {', '.join(map(repr, have)) or 'none'} "
                    "(hf_lvf.add_proxy writes one)"
                )
            return forced.name, forced.sizes
        if sizing.frame_size is None or not sizing.proxies or not layout.header.get("streams"):
            return "bytes", self._sizes
        videos = self._plan.windows_per_video > 0
        proxy = serving_proxy(root_streams(layout), sizing.frame_size, videos)
        return ("bytes", self._sizes) if proxy is None else (proxy.name, proxy.sizes)

    @property
    def streams_at_offsets(self) -> dict[str, tuple[int, int]]:
        """The image streams samples carry at offsets (``frame_offsets=`` or
        ``delta_timestamps=``), each ``(H, W)``: ``(K, H, W, 3)`` and ``<name>_is_pad``."""
        return {name: size for name, _, size in self._offset_streams}

    @property
    def images(self) -> str:
        """The column the frames of ``video`` are read from: ``"bytes"``, or the proxy
        stream (``add_proxy``) that serves this read's ``frame_size``."""
        return self._images

    def _sample_streams(
        self, layout: RootLayout, sizing: FrameSizing, selection: Sequence[str] | None
    ) -> tuple[tuple[str, np.ndarray, tuple[int, int]], ...]:
        """``(name, each video's (H, W), the (H, W) it is read at)`` of each image stream
        samples carry: ``frame_size`` if given, else the stream's own (common) size."""
        from ..layout.image_streams import ImageStream, root_streams, sample_streams

        every = root_streams(layout)
        main = main_camera(layout.header)
        if main is not None and main in self._field_spec.offset_keys and main not in every:
            # LeRobot's delta_timestamps may name the camera of ``video``: its images at the
            # offsets, from the column (and sizes) that serve ``video``
            every[main] = ImageStream(main, (self._images,), None, self._image_sizes)
        at_offsets = [n for n in self._field_spec.offset_keys if n in every and every[n].is_proxy]
        if at_offsets:
            raise ParameterError(
                f"{at_offsets[0]!r} is a proxy stream of root {layout.uri!r}: offsets "
                "(frame_offsets=, delta_timestamps=) name a camera, a per-frame field, or the "
                "frames' own proxies=, not a proxy"
            )
        found = sample_streams(every, selection, layout.uri)
        offsets = [n for n in self._field_spec.offset_keys if n in every]
        found = (*found, *(every[n] for n in offsets if every[n] not in found))
        from ..layout import SAMPLE_KEYS

        taken = {*SAMPLE_KEYS, *self._fields}
        out = []
        for stream in found:
            if stream.name in taken:
                raise LayoutError(
                    f"root {layout.uri!r} has an image stream {stream.name!r}, the name of a key "
                    "its samples have already (video or a metadata field); leave it out with "
                    "streams="
                )
            size = sizing.frame_size or common_frame_size(
                stream.sizes,
                f"the images of stream {stream.name!r} of root {layout.uri!r}",
                self._plan.windows_per_video > 0,
            )
            out.append((stream.name, stream.sizes, tuple(int(n) for n in size)))
        return tuple(out)

    @property
    def streams(self) -> dict[str, tuple[int, int]]:
        """The image streams samples carry, each ``(H, W)`` it is read at (a sample's
        ``sample[name]`` is ``(window_length, H, W, 3)`` uint8 RGB)."""
        return {name: size for name, _, size in self._streams}

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
    def storage_options(self) -> dict[str, str]:
        """The options lance and the object stores are opened with (``hf`` dropped)."""
        return self._storage_options

    @property
    def params(self) -> WindowParams:
        return self._params

    @property
    def plan(self) -> WindowPlan:
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
        return self.read_block(indices)[1]

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
        the map-style builder): :func:`hf_lvf.read.samples.window_samples` of this root,
        with the per-frame fields of ``values``."""
        samples = window_samples(self._layout, self._plan, self._fields, *columns)
        return self._with_fields(samples, columns[1], columns[3], values)

    __getitems__ = take  # what torch's DataLoader calls with a batch of indices

    def read_video(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Only the pixels: ``(len(indices), window_length, H, W, 3)`` uint8."""
        idx = self._plan.normalize(np.asarray(indices).reshape(-1))
        return self._read(idx)[0]

    def read_stream(self, indices: Sequence[int] | np.ndarray, name: str) -> np.ndarray:
        """Only the images of stream ``name``: ``(len(indices), window_length, H, W, 3)`` uint8
        (the frames of ``video`` are read and decoded with them)."""
        if name not in self.streams:
            raise ParameterError(
                f"{name!r} is not an image stream this view of {self.uri!r} reads; it reads "
                f"{', '.join(map(repr, self.streams)) or 'none'} (streams=)"
            )
        idx = self._plan.normalize(np.asarray(indices).reshape(-1))
        if idx.size == 0:
            return np.empty((0, self._params.window_length, *self.streams[name], 3), np.uint8)
        return self._read_fields(idx, fields=False)[4].images[name]

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

    _field_plan: FieldPlan

    @property
    def frame_fields(self) -> dict[str, FrameField]:
        """The per-frame fields samples carry, by name (the root's Lance schema says them:
        read by a child process unless this one has used lance, see
        :mod:`hf_lvf.frames.probe`)."""
        from ..frames import frame_fields, select_fields
        from ..frames.probe import probe_schema

        reader = self._frames.reader
        if reader.is_open:  # opened here: it knows
            return {f.name: f for f in reader.fields}
        from ..layout.image_streams import stream_names

        schema = probe_schema(self._layout, self._storage_options)
        found = frame_fields(schema, where=self.uri, streams=stream_names(self._layout.header))
        spec = self._field_plan.spec
        select_fields(found, self._field_names(spec.offset_keys), self.uri)
        return {f.name: f for f in select_fields(found, self._field_names(spec.read), self.uri)}

    @property
    def base_features(self) -> datasets.Features:
        """:attr:`features` less the per-frame fields (known without the Lance schema)."""
        from .samples import window_features

        features = window_features(self._params, self._out_size, self._fields, self._layout)
        if not self._streams and not self._offset_streams:
            return features
        import datasets

        length = self._params.window_length
        extra = {
            name: datasets.Array4D((length, *size, 3), "uint8") for name, _, size in self._streams
        }
        for name, _, size in self._offset_streams:
            k = self._field_plan.offsets[name].shape[1]
            extra[name] = datasets.Array4D((k, *size, 3), "uint8")
            extra[name + "_is_pad"] = datasets.List(datasets.Value("bool"), length=k)
        return type(features)({**features, **extra})

    def _field_features(self, features: datasets.Features) -> datasets.Features:
        """``features`` with those of the per-frame fields (none read: unchanged)."""
        from .samples import field_features

        spec = self._field_plan.spec
        if spec.selection == () and not spec.offset_keys:
            return features
        found = self.frame_fields
        self._check_names(tuple(found.values()))
        extra = field_features(found.values(), self._params.window_length, self._field_plan.offsets)
        return type(features)({**features, **extra})

    def _with_fields(
        self,
        samples: list[dict[str, Any]],
        video_idx: np.ndarray,
        frame_indices: np.ndarray,
        values: RowFields,
    ) -> list[dict[str, Any]]:
        for name, images in values.images.items():
            for b, sample in enumerate(samples):
                sample[name] = images[b]
        for name, (images, is_pad) in self._streams_at_offsets(video_idx, frame_indices).items():
            for b, sample in enumerate(samples):
                sample[name], sample[name + "_is_pad"] = images[b], is_pad[b]
        if not values.values:
            return samples
        fields = self._frames.reader.fields
        if self.__dict__.get("_checked_fields") is not fields:
            self._check_names(fields)
            self._checked_fields = fields
        columns = self._field_plan.columns(fields, video_idx, frame_indices, values)
        for b, sample in enumerate(samples):
            for name, column in columns.items():
                sample[name] = column[b]
        return samples

    def _check_names(self, fields: tuple[FrameField, ...]) -> None:
        """Refuse a per-frame field named as a key the sample has already (``video``, a
        metadata field, ``frame_is_pad``, another field's ``_is_pad``...)."""
        from ..layout import SAMPLE_KEYS
        from ..plan import IS_PAD
        from .samples import EXTRA_KEYS

        taken = {*SAMPLE_KEYS, *EXTRA_KEYS, *self._fields}
        taken |= {name + IS_PAD for name in self._field_plan.offsets}
        clash = [f.name for f in fields if f.name in taken]
        if clash:
            raise LayoutError(
                f"root {self.uri!r} has a per-frame field {clash[0]!r}, the name of a key its "
                "samples have already (a sample key, a metadata field or a field's _is_pad); "
                "rename the column, or leave it out with frame_fields="
            )

    def _rows_to_fetch(self, strips: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """The rows to fetch ahead for each strip: ``WindowPlan.rows_to_fetch``, and the rows
        the strip's offsets reach (so that no strip needs a second take for its fields)."""
        if not self._field_plan.has_extra_rows:
            yield from self._plan.rows_to_fetch(self._start_rows, strips)
            return
        previous = np.empty(0, np.int64)
        for idx in strips:
            video_idx, _, frame_indices, rows = self._rows(idx)
            extra = self._field_plan.extra_rows(video_idx, frame_indices)
            yield np.setdiff1d(np.union1d(rows, extra), previous)
            previous = rows[-1]

    def _rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(video_idx, start_frame, frame_indices, Lance rows)`` of windows ``idx``."""
        video_idx, start_frame = self._plan.locate(idx)
        frame_indices = self._plan.frame_indices(start_frame, video_idx)
        rows = self._start_rows[video_idx][:, None] + frame_indices
        return video_idx, start_frame, frame_indices, rows

    def _read(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Windows ``idx`` as one dense, writable ``(n, window_length, H, W, 3)`` array."""
        return self._read_fields(idx, fields=False)[:4]  # pixels only: no field column read

    def _read_fields(self, idx: np.ndarray, fields: bool = True) -> tuple[Any, ...]:
        """:meth:`_read` and the field values of the windows' rows (and offsets)."""
        # Before the frame cache: a forked child must fail on every read, not only on a miss.
        check_fork_safe(self.uri)
        video_idx, start_frame, frame_indices, rows = self._rows(idx)
        if idx.size == 0:
            return self._no_windows(), video_idx, start_frame, frame_indices, NO_FIELDS
        height, width = self._out_size
        problem = batch_bytes_problem(rows.size, height, width, self._sizing.batch_bytes)
        if problem is not None:
            raise ParameterError(
                f"reading {idx.size} windows of root {self.uri!r} at once: {problem}"
            )
        extra = self._field_plan.extra_rows(video_idx, frame_indices) if fields else None
        video, values = self._frames.dense(rows, extra, fields=fields)
        return video, video_idx, start_frame, frame_indices, values

    def _no_windows(self) -> np.ndarray:
        """The pixels of no window: ``(0, window_length, H, W, 3)`` uint8."""
        return np.empty((0, self._params.window_length, *self._out_size, 3), np.uint8)

    # --- the interface of the front ends (hf/, training/, engines/): read through these ---

    def read_block(self, indices: Sequence[int] | np.ndarray) -> tuple[np.ndarray, list]:
        """:meth:`take`, and the one ``(n, window_length, H, W, 3)`` array its samples'
        ``video`` values are views of (what the Ray read tasks hand on as a block)."""
        # No dtype= here: casting would truncate 1.5 to 1 instead of refusing it.
        idx = self._plan.normalize(np.asarray(indices).reshape(-1))
        if idx.size == 0:
            return self._no_windows(), []
        with self._ordered.serving(idx, self._fetch_ahead):  # see expect_order
            video, video_idx, start_frame, frame_indices, values = self._read_fields(idx)
        return video, self._samples(
            idx, video_idx, start_frame, frame_indices, video, values=values
        )

    def read_ahead(self, index: int) -> np.ndarray:
        """The pixels ``(window_length, H, W, 3)`` of window ``index``, with the windows after
        it read in the same batch and kept for the next calls: for a front end that decodes
        windows one at a time in order (``WindowVideo``)."""
        return self._windows_ahead(index)

    def field_columns(
        self, fields: Sequence[Any], video_idx: np.ndarray, frame_indices: np.ndarray, values: Any
    ) -> dict[str, Any]:
        """The values of per-frame ``fields`` (and ``_is_pad`` masks) for windows of
        ``video_idx`` at ``frame_indices``, from ``values`` (a :class:`RowFields` of the rows):
        the columns a map-style dataset stores beside its references."""
        return self._field_plan.columns(fields, video_idx, frame_indices, values)

    def _take_shared(self, idx: np.ndarray) -> Callable[[], list[dict[str, Any]]]:
        """Start reading windows ``idx`` into one strip of decoded frames; returns ``finish()``:
        their samples, each a read-only view into the strip."""
        check_fork_safe(self.uri)
        video_idx, start_frame, frame_indices, rows = self._rows(idx)
        extra = self._field_plan.extra_rows(video_idx, frame_indices)
        finish = self._frames.start_shared_fields(rows, extra)

        def samples() -> list[dict[str, Any]]:
            video, values = finish()
            columns = (idx, video_idx, start_frame, frame_indices, video)
            return self._samples(*columns, values=values)

        return samples
