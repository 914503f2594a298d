"""Stored frames -> uint8 RGB arrays, straight into the caller's batch, on a small thread pool.

Each row's format is told by its first bytes (:mod:`hf_lvf.decode.headers`): WebP, JPEG
or PNG, whatever ``_metadata.json``'s ``encoding`` says, so a root of mixed rows reads
right. Before any pixel is decoded, the frame's size is read from its header and checked
against the size its video declares: the guard against decompression bombs (a frame that
declares a huge canvas is refused before anything is allocated for it). Animated WebP
files are refused too: a row holds one still frame.

Pixels are decoded by libwebp, libjpeg-turbo and libpng (:mod:`hf_lvf.decode.pixels`),
into the batch's own memory where the frame is not resized, with the GIL released, so a
couple of threads decode a batch nearly twice as fast on two cores. Pillow resizes to
``frame_size``, decodes JPEG DCT-scaled, and encodes (:mod:`hf_lvf.decode.encode`).

The pool belongs to the process that made it: a forked child makes its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ..errors import FrameDecodeError, ParameterError
from ..plan import Crop
from .encode import (
    CODECS,
    DEFAULT_QUALITY,
    Codec,
    check_codec,
    encode_frame,
    encode_in_order,
    encode_webp,
)
from .headers import KNOWN_FORMATS, FrameHeader, frame_format, read_header, webp_canvas_size
from .pixels import CODEC_ERRORS, dct_scale, decode_into, decode_resized, format_name

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
# Below this many frames per thread, handing work to the pool costs more than it saves.
_MIN_FRAMES_PER_TASK = 2


def default_decode_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _pool(threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), threads)
    pool = _pools.get(key)
    if pool is None:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hf_lvf-decode")
        _pools[key] = pool
    return pool


class Decoding:
    """Frames being decoded into an array by :func:`start_decoding`."""

    def __init__(self, futures: list[Future[None]], errors: dict[int, Exception]):
        self._futures, self._errors = futures, errors

    def wait(self) -> None:
        """Wait until every frame is decoded, then raise the error of the first bad frame, if
        any (at every call)."""
        if self._futures:
            wait(self._futures)
            self._futures = []
        if self._errors:
            raise self._errors[min(self._errors)]


def start_decoding(
    blobs: Sequence[bytes | None],
    out: np.ndarray,
    targets: np.ndarray,
    *,
    expected_sizes: np.ndarray,
    describe: Callable[[int], str],
    threads: int = 1,
    crop: Crop = "none",
    copies: Sequence[Sequence[int]] | None = None,
    decode_scaled: bool = True,
) -> Decoding:
    """Start decoding ``blobs[k]`` (WebP, JPEG or PNG, told by their first bytes) into
    ``out[targets[k]]`` (and copying it on to ``out[copies[k]]``) on the decode threads,
    while the caller goes on; wait for the returned :class:`Decoding`. With one thread, or
    too few frames to share, the frames are decoded before this returns.

    Args:
        blobs: encoded frames.
        out: ``(N, H, W, 3)`` uint8 C-contiguous array to fill.
        targets: ``(len(blobs),)`` positions in ``out``.
        expected_sizes: ``(len(blobs), 2)`` ``(H, W)`` each frame must decode to;
            frames are resized to ``out``'s ``(H, W)`` when that differs.
        describe: ``k -> "frame f of video v (...) in root"``, for error messages.
        threads: decode threads; 1 decodes in the calling thread.
        crop: how a frame is resized to ``out``'s size (:func:`hf_lvf.plan.crop_box`).
        copies: ``copies[k]``: further positions in ``out`` that get frame ``k`` (a frame
            that several windows of a batch need). The thread that decoded it copies it
            at once, while it is still in that core's cache.
        decode_scaled: JPEG frames resized to at most 1/2, 1/4 or 1/8 of their size decode
            straight to that scale (libjpeg's DCT scaling), then are resized as the others.

    Raises (from :meth:`Decoding.wait`):
        FrameDecodeError: a blob is null, in no known format (WebP, JPEG, PNG),
            truncated, corrupt, animated, or its header declares a size other than its expected one
            (checked before decoding, so a huge declared canvas costs nothing).
            With several bad frames, the first of them.
    """
    n = len(blobs)
    sizes, places = expected_sizes.tolist(), targets.tolist()  # Python ints: cheap per frame
    out_size = out.shape[1:3]
    # Each thread takes the next frame as it is free (no thread waits while frames are left,
    # also when another process takes a core for a while). After a failure, frames past the
    # first failed one known are skipped: every frame before the first bad one is decoded,
    # so the error raised is always that of the first bad frame.
    frames = iter(range(n))  # next() of a range iterator is atomic under the GIL
    errors: dict[int, Exception] = {}
    first_bad = [n]

    def work() -> None:
        for k in frames:
            if k > first_bad[0]:
                return
            try:
                _decode_frame(
                    blobs[k], out, places[k], sizes[k], out_size, crop, describe, k, decode_scaled
                )
                if copies is not None:
                    for other in copies[k]:
                        out[other] = out[places[k]]
            except Exception as err:  # noqa: BLE001  (raised by Decoding.wait)
                errors[k] = err
                first_bad[0] = min(first_bad[0], k)

    tasks = min(threads, n // _MIN_FRAMES_PER_TASK)
    if tasks <= 1:
        work()
        return Decoding([], errors)
    pool = _pool(threads)
    return Decoding([pool.submit(work) for _ in range(tasks)], errors)


def decode_frame(blob: bytes) -> np.ndarray:
    """One stored frame (WebP, JPEG or PNG) as a new ``(H, W, 3)`` uint8 RGB array, at the
    size its header declares.

    Raises:
        ValueError: the bytes are in no known format, or truncated or corrupt.
    """
    header = read_header(blob)
    out = np.empty((header.height, header.width, 3), np.uint8)
    try:
        decode_into(blob, header, out)
    except CODEC_ERRORS as err:
        raise ParameterError(f"not a valid {format_name(header)} image: {err}") from err
    return out


def _decode_frame(
    blob: bytes | None,
    out: np.ndarray,
    place: int,
    size: tuple[int, int],
    out_size: tuple[int, int],
    crop: Crop,
    describe: Callable[[int], str],
    k: int,
    decode_scaled: bool,
) -> None:
    if blob is None:
        raise FrameDecodeError(f"{describe(k)} has no bytes (null)")
    try:
        header = read_header(blob)
    except ValueError as err:
        raise FrameDecodeError(f"{describe(k)} {err}") from err
    height, width = size
    if header.height != height or header.width != width:
        raise FrameDecodeError(
            f"{describe(k)} decodes to {header.width}x{header.height} (WxH) but its video "
            f"declares {width}x{height}"
        )
    try:
        if out_size == (height, width):
            decode_into(blob, header, out[place])
        else:
            out[place] = decode_resized(blob, header, out_size, crop, decode_scaled=decode_scaled)
    except CODEC_ERRORS as err:
        raise FrameDecodeError(
            f"{describe(k)} is not a valid {format_name(header)} image: {err}"
        ) from err


__all__ = [
    "CODECS",
    "DEFAULT_QUALITY",
    "KNOWN_FORMATS",
    "Codec",
    "Decoding",
    "FrameHeader",
    "check_codec",
    "dct_scale",
    "decode_frame",
    "default_decode_threads",
    "encode_frame",
    "encode_in_order",
    "encode_webp",
    "frame_format",
    "read_header",
    "start_decoding",
    "webp_canvas_size",
]
