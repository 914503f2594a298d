"""WebP bytes -> uint8 RGB arrays, straight into the caller's batch, on a small thread pool.

Frames are decoded by libwebp through imagecodecs' ``webp_decode(data, out=slot)``:
it writes into the given array slot (no intermediate image, no copy) and releases
the GIL, so a couple of threads decode a batch nearly twice as fast on two cores.
Its pixels are the ones Pillow and OpenCV give for the same bytes (the same
libwebp decoder and colour conversion); the README has the measurements behind
this choice.

Before any pixel is decoded, the frame's size is read from its WebP header
(RIFF, then a VP8, VP8L or VP8X chunk) and checked against the size its video
declares. That check is the guard against decompression bombs: a frame that
declares a huge canvas is refused before anything is allocated for it. Animated
WebP files are refused too: a row holds one still frame.

Pillow is used here only where it is the right tool: resizing to ``frame_size``
and encoding (same bytes and speed as libwebp's own encoder through imagecodecs).

The pool belongs to the process that made it: a forked child makes its own.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

import imagecodecs
import numpy as np
from PIL import Image

from .errors import FrameDecodeError
from .sizes import Crop, crop_box

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
# Below this many frames per thread, handing work to the pool costs more than it saves.
_MIN_FRAMES_PER_TASK = 2
# VP8X flags (WebP container specification, "Extended file format").
_ANIMATION_FLAG = 0x02
_VP8_START_CODE = b"\x9d\x01\x2a"
_VP8L_SIGNATURE = 0x2F
_U32 = struct.Struct("<I")
_VP8_SIZE = struct.Struct("<HH")
_CHUNK_HEADER = struct.Struct("<4sI")


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
) -> Decoding:
    """Start decoding ``blobs[k]`` into ``out[targets[k]]`` (and copying it on to
    ``out[copies[k]]``) on the decode threads, while the caller goes on; wait for the
    returned :class:`Decoding`. With one thread, or too few frames to share, the frames are
    decoded before this returns.

    Args:
        blobs: encoded frames.
        out: ``(N, H, W, 3)`` uint8 C-contiguous array to fill.
        targets: ``(len(blobs),)`` positions in ``out``.
        expected_sizes: ``(len(blobs), 2)`` ``(H, W)`` each frame must decode to;
            frames are resized to ``out``'s ``(H, W)`` when that differs.
        describe: ``k -> "frame f of video v (...) in root"``, for error messages.
        threads: decode threads; 1 decodes in the calling thread.
        crop: how a frame is resized to ``out``'s size (:func:`hf_lvf.sizes.crop_box`).
        copies: ``copies[k]``: further positions in ``out`` that get frame ``k`` (a frame
            that several windows of a batch need). The thread that decoded it copies it
            at once, while it is still in that core's cache.

    Raises (from :meth:`Decoding.wait`):
        FrameDecodeError: a blob is null, not a WebP image, truncated, corrupt,
            animated, or its header declares a size other than its expected one
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
                _decode_frame(blobs[k], out, places[k], sizes[k], out_size, crop, describe, k)
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


def _decode_frame(
    blob: bytes | None,
    out: np.ndarray,
    place: int,
    size: tuple[int, int],
    out_size: tuple[int, int],
    crop: Crop,
    describe: Callable[[int], str],
    k: int,
) -> None:
    if blob is None:
        raise FrameDecodeError(f"{describe(k)} has no bytes (null)")
    try:
        canvas_w, canvas_h = webp_canvas_size(blob)
    except ValueError as err:
        raise FrameDecodeError(f"{describe(k)} {err}") from err
    height, width = size
    if canvas_h != height or canvas_w != width:
        raise FrameDecodeError(
            f"{describe(k)} decodes to {canvas_w}x{canvas_h} (WxH) but its video "
            f"declares {width}x{height}"
        )
    out_h, out_w = out_size
    resize = height != out_h or width != out_w
    slot = np.empty((height, width, 3), np.uint8) if resize else out[place]
    try:
        # hasalpha=False: RGB even where a tool stored an alpha channel (dropped, as
        # Pillow's convert("RGB") drops it).
        imagecodecs.webp_decode(blob, out=slot, hasalpha=False)
    except (imagecodecs.WebpError, ValueError, RuntimeError) as err:
        raise FrameDecodeError(f"{describe(k)} is not a valid WebP image: {err}") from err
    if resize:
        box = crop_box(height, width, out_h, out_w, crop)
        image = Image.fromarray(slot, "RGB").resize(
            (out_w, out_h), Image.Resampling.BILINEAR, box=box
        )
        out[place] = np.asarray(image)


def webp_canvas_size(blob: bytes) -> tuple[int, int]:
    """``(width, height)`` a still WebP image declares in its header, without decoding it.

    Reads the RIFF header and the first chunk (``VP8``, ``VP8L`` or ``VP8X``); for
    ``VP8X``, also walks the chunk headers that follow, to refuse animations.

    Raises:
        ValueError: the bytes are not a WebP image (the message says why, to follow
            "frame ... of video ..."), are truncated before the image header, or
            hold an animation.
    """
    if len(blob) < 12 or blob[:4] != b"RIFF" or blob[8:12] != b"WEBP":
        raise ValueError("is not a valid WebP image: no RIFF/WEBP signature")
    riff_end = 8 + _U32.unpack_from(blob, 4)[0]
    if riff_end > len(blob):
        raise ValueError(
            f"is not a valid WebP image: truncated (its RIFF header declares {riff_end} bytes, "
            f"it has {len(blob)})"
        )
    fourcc, start, size = _chunk(blob, 12, riff_end)
    if fourcc == b"VP8 ":
        if size < 10 or blob[start + 3 : start + 6] != _VP8_START_CODE or blob[start] & 1:
            raise ValueError("is not a valid WebP image: corrupt VP8 key frame header")
        width, height = _VP8_SIZE.unpack_from(blob, start + 6)
        return width & 0x3FFF, height & 0x3FFF
    if fourcc == b"VP8L":
        if size < 5 or blob[start] != _VP8L_SIGNATURE:
            raise ValueError("is not a valid WebP image: corrupt VP8L header")
        bits = _U32.unpack_from(blob, start + 1)[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8X":
        if size < 10:
            raise ValueError("is not a valid WebP image: corrupt VP8X header")
        animated = bool(blob[start] & _ANIMATION_FLAG)
        position = start + size + size % 2
        # The chunks before the image (ICCP, ALPH, ANIM, ...): a handful of headers at most.
        while not animated and position + 8 <= riff_end:
            kind, at, length = _chunk(blob, position, riff_end)
            if kind in (b"VP8 ", b"VP8L"):
                break
            animated = kind in (b"ANIM", b"ANMF")
            position = at + length + length % 2
        if animated:
            raise ValueError("is an animated WebP image; a row must hold one still frame")
        width = int.from_bytes(blob[start + 4 : start + 7], "little") + 1
        height = int.from_bytes(blob[start + 7 : start + 10], "little") + 1
        return width, height
    raise ValueError(f"is not a valid WebP image: unknown first chunk {fourcc!r}")


def _chunk(blob: bytes, position: int, end: int) -> tuple[bytes, int, int]:
    """``(fourcc, payload start, payload size)`` of the chunk at ``position``."""
    if position + 8 > end:
        raise ValueError("is not a valid WebP image: truncated before its image header")
    fourcc, size = _CHUNK_HEADER.unpack_from(blob, position)
    start = position + 8
    if start + size > end:
        raise ValueError(
            f"is not a valid WebP image: truncated ({fourcc!r} chunk of {size} bytes, "
            f"{end - start} left)"
        )
    return fourcc, start, size


def encode_webp(frame: np.ndarray, *, quality: int) -> bytes:
    """Encode one ``(H, W, 3)`` uint8 RGB frame as lossy WebP."""
    buf = io.BytesIO()
    Image.fromarray(frame, "RGB").save(buf, format="WEBP", quality=quality)
    return buf.getvalue()
