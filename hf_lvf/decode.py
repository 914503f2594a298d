"""WebP bytes -> uint8 RGB arrays, with Pillow, on a small thread pool.

Pillow releases the GIL while it decodes, so a couple of threads decode a
batch of frames nearly twice as fast on two cores. The pool belongs to the
process that made it: a forked child makes its own.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image, UnidentifiedImageError

from .errors import FrameDecodeError
from .sizes import Crop, crop_box

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
# Below this many frames per thread, handing work to the pool costs more than it saves.
_MIN_FRAMES_PER_THREAD = 2


def default_decode_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _pool(threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), threads)
    pool = _pools.get(key)
    if pool is None:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hf_lvf-decode")
        _pools[key] = pool
    return pool


def decode_into(
    blobs: Sequence[bytes],
    out: np.ndarray,
    targets: np.ndarray,
    *,
    expected_sizes: np.ndarray,
    describe: Callable[[int], str],
    threads: int = 1,
    crop: Crop = "none",
) -> None:
    """Decode ``blobs[k]`` into ``out[targets[k]]``.

    Args:
        blobs: encoded frames.
        out: ``(N, H, W, 3)`` uint8 array to fill.
        targets: ``(len(blobs),)`` positions in ``out``.
        expected_sizes: ``(len(blobs), 2)`` ``(H, W)`` each frame must decode to;
            frames are resized to ``out``'s ``(H, W)`` when that differs.
        describe: ``k -> "frame f of video v (...) in root"``, for error messages.
        threads: decode threads; 1 decodes in the calling thread.
        crop: how a frame is resized to ``out``'s size (:func:`hf_lvf.sizes.crop_box`).

    Raises:
        FrameDecodeError: a blob is not a WebP image, is corrupt, or has a size
            other than its expected one.
        PIL.Image.DecompressionBombError: a frame declares more pixels than
            Pillow's ``Image.MAX_IMAGE_PIXELS`` guard allows; the message names it.
    """
    n = len(blobs)
    chunks = min(threads, n // _MIN_FRAMES_PER_THREAD)
    if chunks <= 1:
        _decode_range(blobs, out, targets, expected_sizes, describe, 0, n, crop)
        return
    bounds = np.linspace(0, n, chunks + 1).astype(int)
    pool = _pool(threads)
    futures = [
        pool.submit(_decode_range, blobs, out, targets, expected_sizes, describe, lo, hi, crop)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    for future in futures:
        future.result()


def _decode_range(
    blobs, out, targets, expected_sizes, describe, lo: int, hi: int, crop: Crop = "none"
) -> None:
    out_h, out_w = out.shape[1:3]
    for k in range(lo, hi):
        height, width = (int(s) for s in expected_sizes[k])
        image = _open_webp(blobs[k], describe, k)
        if image.size != (width, height):
            raise FrameDecodeError(
                f"{describe(k)} decodes to {image.size[0]}x{image.size[1]} (WxH) but its video "
                f"declares {width}x{height}"
            )
        if image.mode != "RGB":
            image = image.convert("RGB")
        if (height, width) != (out_h, out_w):
            box = crop_box(height, width, out_h, out_w, crop)
            image = image.resize((out_w, out_h), Image.Resampling.BILINEAR, box=box)
        out[targets[k]] = np.asarray(image)


def _open_webp(blob: bytes, describe: Callable[[int], str], k: int) -> Image.Image:
    if blob is None:
        raise FrameDecodeError(f"{describe(k)} has no bytes (null)")
    try:
        image = Image.open(io.BytesIO(blob), formats=["WEBP"])
        image.load()
    except Image.DecompressionBombError as err:
        # The guard is a security limit: keep Pillow's type (callers may catch it) and never
        # turn it off, but say which frame tripped it.
        raise Image.DecompressionBombError(f"{describe(k)}: {err}") from err
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as err:
        raise FrameDecodeError(f"{describe(k)} is not a valid WebP image: {err}") from err
    return image


def encode_webp(frame: np.ndarray, *, quality: int) -> bytes:
    """Encode one ``(H, W, 3)`` uint8 RGB frame as lossy WebP."""
    buf = io.BytesIO()
    Image.fromarray(frame, "RGB").save(buf, format="WEBP", quality=quality)
    return buf.getvalue()
