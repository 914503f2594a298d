"""``WindowVideo``: a ``datasets`` feature that stores a reference to a window, decoded on read.

The map-style dataset that ``load_dataset("hf_lvf", ...)`` builds keeps only what
identifies each window in its Arrow cache: ``{"root", "root_id", "lance_version",
"video_idx", "start_frame"}``, a reference that names its root and the state of the root
it was made from (:mod:`hf_lvf.hf.root_binding`). Reading a row decodes it, like ``Image``
and ``Video`` do, into exactly the ``Array4D`` the feature names (``(window_length, H, W,
3)`` uint8), through one :class:`~hf_lvf.VideoWindows` per root and parameters per
process, opened lazily in the process that reads. The feature holds no root, so the
features of datasets over different roots are equal: they concatenate and interleave,
and every row still reads its own root.

Two pieces of glue make the decoded value behave:

- ``with_format("numpy")`` / ``with_format("torch")`` turn every integer array
  into int64 (8x the memory of a window). hf_lvf registers drop-in subclasses of
  datasets' numpy and torch formatters that leave ``WindowVideo`` columns in
  their dtype (uint8, zero-copy for torch) and behave exactly like datasets'
  own for every other column and every other dataset.
- A ``.map`` that reads ``video`` and returns it unchanged hands the writer the
  decoded pixels. Each process remembers a fingerprint of the windows it
  decoded recently; :meth:`WindowVideo.cast_storage` recognises such pixels,
  checks them against a fresh decode of the window, and writes the reference
  back, so no pixels reach the cache. Changed pixels cannot be stored as a
  reference: with inferred features datasets then stores them as plain lists,
  with explicit ``WindowVideo`` features the write fails with a clear error.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ParameterError, ParameterTypeError, UsageError
from ..layout import RootLayout
from ..plan import (
    DEFAULT_MAX_FRAME_PIXELS,
    Crop,
    FrameSizing,
    WindowParams,
    check_crop,
    check_limit,
)
from ..read.windows import VideoWindows
from .internals import register_window_feature
from .root_binding import (
    REFERENCE_FIELDS,
    REFERENCE_TYPE,
    RootStamp,
    bound_layout,
    decoder,
    parse_reference,
    window_index,
)

_OLD_REFERENCES = (
    " (references stored by an older hf_lvf, without their root's identity: load the dataset again)"
)
_FINGERPRINT_SAMPLES = 4096
_RECENT_CAPACITY = 8192


@dataclass
class WindowVideo:
    """A frame window stored as a reference to a lance-video-frames root, decoded on access.

    Args:
        array: the ``datasets.Array4D`` a decoded value has: shape
            ``(window_length, H, W, 3)``, dtype ``"uint8"``.
        frame_skip, short_videos, fps: the window options the references were cut with: see
            :class:`hf_lvf.WindowParams`; a reference's ``start_frame`` is a start in the
            (virtual, with ``fps``) frames they count.
        roots: unused; read from features saved by hf_lvf before references named their
            roots (those references cannot be read: load the dataset again).
        crop: how frames of another size are brought to the array's ``(H, W)``
            (``"none"``: stretched; ``"center"``: scaled to cover, middle cut out).
        max_frame_pixels: the per-frame pixel limit of the roots' declared sizes
            (see :class:`hf_lvf.VideoWindows`).
        decode: decode to pixels when read; ``False`` gives the stored reference
            ``{"root": str, "root_id": int, "lance_version": int, "video_idx": int,
            "start_frame": int}`` (see :mod:`hf_lvf.hf.root_binding`).
        stream: the image stream the references decode to (FORMAT.md, "Image streams"), a
            column of its own beside ``video`` with the same references; ``None``: ``bytes``.
        proxies: which stream decodes ``video``: the smallest proxy that covers the array's
            size (``True``), always the full frames (``False``) or the proxy of that name
            (see :class:`hf_lvf.plan.FrameSizing`).

    Examples:
        >>> import datasets, hf_lvf
        >>> ds = datasets.load_dataset(  # doctest: +SKIP
        ...     "hf_lvf", data_dir="clips/", window_length=16
        ... )
        >>> ds["train"].features["video"]  # doctest: +SKIP
        WindowVideo(array=Array4D(shape=(16, 224, 224, 3), dtype='uint8'), frame_skip=0, ...)
        >>> refs = ds["train"].cast_column("video", WindowVideo(decode=False))  # doctest: +SKIP
        >>> refs[0]["video"]  # doctest: +SKIP
        {'root': '/data/clips/train', 'root_id': ..., 'lance_version': 1, 'video_idx': 0, ...}
    """

    array: datasets.Array4D | None = None
    frame_skip: int = 0
    roots: tuple[str, ...] = field(default=(), compare=False, repr=False)
    crop: Crop = "none"
    max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS
    decode: bool = True
    short_videos: str = "drop"
    fps: float | None = None
    id: str | None = field(default=None, repr=False)
    stream: str | None = field(default=None, repr=False)
    proxies: bool | str = field(default=True, repr=False)
    pa_type: ClassVar[Any] = REFERENCE_TYPE
    _type: str = field(default="WindowVideo", init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.array, Mapping):  # deserialised from JSON / YAML
            self.array = datasets.features.features.generate_from_dict(dict(self.array))
        if self.array is not None:
            if not isinstance(self.array, datasets.Array4D):
                raise ParameterTypeError(f"array must be a datasets.Array4D, got {self.array!r}")
            shape = tuple(int(s) for s in self.array.shape)
            if len(shape) != 4 or shape[3] != 3 or min(shape) < 1 or self.array.dtype != "uint8":
                raise ParameterError(
                    f"array must be Array4D((window_length, H, W, 3), 'uint8'), got {self.array!r}"
                )
            self.array = datasets.Array4D(shape=shape, dtype="uint8")
        if isinstance(self.frame_skip, bool) or not isinstance(self.frame_skip, int):
            raise ParameterTypeError(f"frame_skip must be an integer >= 0, got {self.frame_skip!r}")
        if self.frame_skip < 0:
            raise ParameterError(f"frame_skip must be >= 0, got {self.frame_skip!r}")
        if isinstance(self.roots, str) or not all(isinstance(r, str) for r in self.roots):
            raise ParameterTypeError(f"roots must be a sequence of root URIs, got {self.roots!r}")
        self.roots = tuple(self.roots)
        check_crop(self.crop)
        self.max_frame_pixels = check_limit("max_frame_pixels", self.max_frame_pixels)
        FrameSizing(proxies=self.proxies)  # validates it
        timing = WindowParams(short_videos=self.short_videos, fps=self.fps)  # validates them
        self.short_videos, self.fps = timing.short_videos, timing.fps
        self._roots_checked: dict[RootStamp, RootLayout] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The roots checked stay behind: another process (or a copy) checks them again.
        return {k: v for k, v in self.__dict__.items() if k != "_roots_checked"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._roots_checked = {}

    def __call__(self) -> pa.DataType:
        return self.pa_type

    @property
    def shape(self) -> tuple[int, int, int, int] | None:
        """``(window_length, H, W, 3)`` of a decoded value."""
        return None if self.array is None else self.array.shape

    # --- writing -------------------------------------------------------------------

    def encode_example(self, value: Any) -> dict[str, Any]:
        """A reference dict, or pixels this process decoded (as read, unchanged), as a reference.

        Raises:
            ValueError: ``value`` is pixels that are not a window this process decoded.
            TypeError: ``value`` is neither a reference nor an array.
        """
        if isinstance(value, Mapping):
            stamp, video_idx, start_frame = parse_reference(value)
            return stamp.reference(video_idx, start_frame)
        if isinstance(value, np.ndarray):
            reference = self._reference_of(value)
            if reference is None:
                raise ParameterError(self._not_a_reference_message())
            return reference
        raise ParameterTypeError(
            f"a WindowVideo value must be a reference dict or a decoded window, got "
            f"{type(value).__name__}"
        )

    def cast_storage(self, storage: pa.Array) -> pa.StructArray:
        """Cast references (a struct array) or decoded, unchanged pixels to the reference storage.

        Raises:
            TypeError: ``storage`` holds pixels that are not windows this process
                decoded (changed, or decoded elsewhere), or has an unrelated type.
        """
        if isinstance(storage, pa.ChunkedArray):
            storage = storage.combine_chunks()
        if isinstance(storage, pa.ExtensionArray):
            storage = storage.storage
        if pa.types.is_null(storage.type):
            return pa.array([None] * len(storage), type=self.pa_type)
        if pa.types.is_struct(storage.type):
            names = [storage.type.field(i).name for i in range(storage.type.num_fields)]
            missing = [name for name in REFERENCE_FIELDS if name not in names]
            if missing:
                raise ParameterTypeError(
                    f"cannot cast {storage.type} to WindowVideo: missing field(s) {missing}"
                    + (_OLD_REFERENCES if "root" in names else "")
                )
            arrays = [storage.field(f.name).cast(f.type) for f in REFERENCE_TYPE]
            return pa.StructArray.from_arrays(
                arrays, fields=list(REFERENCE_TYPE), mask=storage.is_null()
            )
        if _is_list_type(storage.type):
            return self._references_of_pixels(storage)
        raise ParameterTypeError(f"cannot cast {storage.type} to WindowVideo")

    def flatten(self) -> WindowVideo | dict[str, datasets.Value]:
        """The reference's fields when not decoding (as ``Image`` does)."""
        if self.decode:
            return self
        return {f.name: datasets.Value(str(f.type)) for f in REFERENCE_TYPE}

    # --- reading -------------------------------------------------------------------

    def decode_example(
        self, value: Mapping[str, Any], token_per_repo_id: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """The pixels of a reference: ``(window_length, H, W, 3)`` uint8, read from the root
        the reference names.

        Raises:
            LayoutError: the root is gone or changed since the reference was made (see
                :mod:`hf_lvf.hf.root_binding`).
            ValueError: the feature has no ``array`` to decode with, or the reference is not
                a window of its root.
            FrameDecodeError, ForkSafetyError: see :meth:`hf_lvf.VideoWindows.take`.
        """
        if not self.decode:
            raise UsageError("decode_example on a WindowVideo(decode=False) feature")
        stamp, video_idx, start_frame = self._resolve(value)
        view = self._view(stamp)
        if self.stream is None:
            pixels = view.read_ahead(window_index(view, video_idx, start_frame))  # and the next
        else:
            pixels = self._pixels(view, [window_index(view, video_idx, start_frame)])[0]
        _remember(pixels, (stamp, self._params(), self._size(), video_idx, start_frame))
        return pixels

    def decode_batch_of(self, values: list[Mapping[str, Any] | None]) -> np.ndarray | list[Any]:
        """The pixels of many references, read together: one Lance read per root, each
        distinct frame decoded once (what ``ds[i:j]``, ``ds[[...]]`` and ``__getitems__`` use).

        Returns:
            A dense ``(len(values), window_length, H, W, 3)`` uint8 array (rows independent,
            writable), or, when some value is ``None``, a list of arrays and ``None``.
        """
        if not self.decode:
            raise UsageError("decode_batch_of on a WindowVideo(decode=False) feature")
        params, size = self._params(), self._size()
        by_root: dict[RootStamp, list[tuple[int, int, int]]] = {}
        for position, value in enumerate(values):
            if value is not None:
                stamp, video_idx, start_frame = self._resolve(value)
                by_root.setdefault(stamp, []).append((position, video_idx, start_frame))
        single = len(by_root) == 1 and sum(map(len, by_root.values())) == len(values)
        # One root, no null: its read is the batch (no second copy).
        out = None if single else np.empty((len(values), *self.array.shape), np.uint8)
        for stamp, entries in by_root.items():
            view = self._view(stamp)
            windows = [window_index(view, v, start) for _, v, start in entries]
            if out is None:
                out = self._pixels(view, windows)
            else:
                out[[position for position, _, _ in entries]] = self._pixels(view, windows)
            for position, video_idx, start_frame in entries:
                _remember(out[position], (stamp, params, size, video_idx, start_frame))
        if any(value is None for value in values):
            return [out[p] if value is not None else None for p, value in enumerate(values)]
        return out

    def _pixels(self, view: VideoWindows, windows: list[int]) -> np.ndarray:
        """The pixels of ``windows`` of ``view``: its frames, or this feature's stream's."""
        if self.stream is None:
            return view.read_video(windows)
        return view.read_stream(windows, self.stream)

    def _params(self) -> WindowParams:
        timing = {"short_videos": self.short_videos, "fps": self.fps}
        return WindowParams(window_length=self.array.shape[0], frame_skip=self.frame_skip, **timing)

    def _size(self) -> tuple[int, int, Crop, int, bool | str]:
        return (*self.array.shape[1:3], self.crop, self.max_frame_pixels, self.proxies)

    def _resolve(self, value: Mapping[str, Any]) -> tuple[RootStamp, int, int]:
        if self.array is None:
            raise ParameterError(
                "this WindowVideo has no array to decode with; decode with the dataset's own "
                "feature (ds.features['video']), or read references with WindowVideo(decode=False)"
            )
        return parse_reference(value)

    def _view(self, stamp: RootStamp) -> VideoWindows:
        """The decoding view of ``stamp``'s root; the root is checked the first time this
        feature (this dataset) reads it, not once per row."""
        layout = self._roots_checked.get(stamp)
        if layout is None:
            layout = self._roots_checked[stamp] = bound_layout(stamp)
        return decoder(layout, self._params(), self._size(), self.stream)

    # --- pixels back to references --------------------------------------------------

    def _not_a_reference_message(self) -> str:
        return (
            "the 'video' column stores references to windows (WindowVideo), and these pixels are "
            "not a window this process decoded and left unchanged; to keep changed pixels, write "
            "them to a new column or pass features= with datasets.Array4D for the column"
        )

    def _reference_of(self, pixels: np.ndarray) -> dict[str, Any] | None:
        if self.array is None or pixels.shape != self.array.shape or pixels.dtype != np.uint8:
            return None
        # Latest first: identical pixels in two roots are the window this row just read.
        for stamp, params, size, video_idx, start_frame in reversed(_recalled(pixels)):
            if params != self._params() or size != self._size():
                continue
            view = self._view(stamp)
            fresh = self._pixels(view, [window_index(view, video_idx, start_frame)])[0]
            if np.array_equal(fresh, pixels):
                return stamp.reference(video_idx, start_frame)
        return None

    def _references_of_pixels(self, storage: pa.Array) -> pa.StructArray:
        windows = _list_array_to_windows(storage, self.array.shape if self.array else None)
        if windows is None:
            raise ParameterTypeError(self._not_a_reference_message())
        rows = []
        for b in range(len(storage)):
            reference = self._reference_of(windows[b])
            if reference is None:
                raise ParameterTypeError(self._not_a_reference_message())
            rows.append(reference)
        return pa.array(rows, type=self.pa_type)


def _is_list_type(kind: pa.DataType) -> bool:
    return (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def _list_array_to_windows(storage: pa.Array, shape: tuple[int, ...] | None) -> np.ndarray | None:
    """``(n, *shape)`` uint8 view of a nested list array holding ``n`` windows, or ``None``."""
    if shape is None:
        return None
    values = storage
    for extent in shape:
        if not _is_list_type(values.type):
            return None
        if values.null_count:
            return None
        if pa.types.is_fixed_size_list(values.type):
            if values.type.list_size != extent:
                return None
        elif len(values):
            bounds = pc.min_max(values.value_lengths()).as_py()
            if bounds != {"min": extent, "max": extent}:
                return None
        values = values.flatten()
    if values.null_count or not pa.types.is_integer(values.type):
        return None
    flat = values.to_numpy(zero_copy_only=False)
    if flat.size != len(storage) * int(np.prod(shape)):
        return None
    if flat.min(initial=0) < 0 or flat.max(initial=0) > 255:
        return None
    return flat.astype(np.uint8, copy=False).reshape(len(storage), *shape)


# --- per-process state: fingerprints of the windows decoded recently ---

_recent: OrderedDict[int, list[tuple]] = OrderedDict()
_recent_pid: int | None = None


def _fingerprint(pixels: np.ndarray) -> int:
    flat = pixels.reshape(-1)
    step = max(1, flat.size // _FINGERPRINT_SAMPLES)
    return hash((pixels.shape, flat[::step].tobytes()))


def _remember(pixels: np.ndarray, reference: tuple) -> None:
    global _recent_pid
    if _recent_pid != os.getpid():
        _recent.clear()
        _recent_pid = os.getpid()
    key = _fingerprint(pixels)
    entries = [entry for entry in _recent.pop(key, []) if entry != reference]
    entries.append(reference)  # the latest decode last
    _recent[key] = entries
    while len(_recent) > _RECENT_CAPACITY:
        _recent.popitem(last=False)


def _recalled(pixels: np.ndarray) -> list[tuple]:
    if _recent_pid != os.getpid():
        return []
    return list(_recent.get(_fingerprint(pixels), ()))


def register_feature() -> None:
    """Register ``WindowVideo`` and the window-aware formatters with ``datasets`` (idempotent)."""
    register_window_feature(WindowVideo, "WindowVideo")


__all__ = ["WindowVideo", "register_feature"]
