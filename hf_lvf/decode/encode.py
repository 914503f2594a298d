"""Frames -> encoded rows: the one place a writer encodes, with Pillow.

Pillow's WebP encoder is libwebp's (the same bytes and speed as through imagecodecs), its
JPEG encoder libjpeg-turbo's, its PNG encoder zlib's.
"""

from __future__ import annotations

import collections
import io
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

import numpy as np
from PIL import Image

from ..errors import ParameterError

Codec = Literal["webp", "jpeg", "png"]
CODECS: tuple[Codec, ...] = ("webp", "jpeg", "png")
DEFAULT_QUALITY = 90
"""The encoder quality a conversion uses unless told otherwise (WebP, 0-100): 90, the lowest
of the qualities ``benchmarks/bench_codecs.py`` measures that keeps 40 dB mean PSNR on real
H.264 clips (40.8 dB; 65, the layout's first default, keeps 36.1 dB and 80 38.0 dB); see
docs/benchmarks.md and the converting guide."""
# zlib level of PNG rows: measured on a noisy 640x272 gradient, level 1 encodes in 16 ms
# against 61 ms at Pillow's default 6, for 18% more bytes (the encode is a conversion's
# bottleneck; decode speed hardly changes).
_PNG_COMPRESS_LEVEL = 1


def check_codec(codec: object, quality: object, lossless: object) -> tuple[Codec, int | None, bool]:
    """``(codec, quality, lossless)`` as a root records them: ``quality`` is ``None`` where
    the frames are lossless (PNG always is).

    Raises:
        ValueError: an unknown codec, a quality outside 0-100, or a lossless JPEG.
    """
    if codec not in CODECS:
        raise ParameterError(f"codec must be one of {', '.join(map(repr, CODECS))}, got {codec!r}")
    if not isinstance(lossless, bool):
        raise ParameterError(f"lossless must be True or False, got {lossless!r}")
    if lossless and codec == "jpeg":
        raise ParameterError(
            "lossless=True is not possible with codec='jpeg' (JPEG is lossy); use "
            "codec='png' or codec='webp' for lossless frames"
        )
    if codec == "png":
        lossless = True
    if lossless and quality is None:  # as this returns it for lossless frames
        return codec, None, True
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 100:
        raise ParameterError(f"quality must be an integer in [0, 100], got {quality!r}")
    return codec, None if lossless else quality, lossless


def encode_frame(
    frame: np.ndarray, *, codec: Codec = "webp", quality: int | None = 65, lossless: bool = False
) -> bytes:
    """Encode one ``(H, W, 3)`` uint8 RGB frame (arguments as :func:`check_codec` returns
    them)."""
    buf = io.BytesIO()
    image = Image.fromarray(frame, "RGB")
    if codec == "png":
        image.save(buf, format="PNG", compress_level=_PNG_COMPRESS_LEVEL)
    elif codec == "jpeg":
        image.save(buf, format="JPEG", quality=quality)
    elif lossless:
        image.save(buf, format="WEBP", lossless=True)
    else:
        image.save(buf, format="WEBP", quality=quality)
    return buf.getvalue()


def encode_webp(frame: np.ndarray, *, quality: int) -> bytes:
    """Encode one ``(H, W, 3)`` uint8 RGB frame as lossy WebP."""
    return encode_frame(frame, codec="webp", quality=quality)


IN_FLIGHT_PER_THREAD = 2
"""Frames handed to each encode thread ahead of the one the caller waits for: with two, a
thread never idles while the caller takes a finished frame, and memory stays
``2 * threads`` frames whatever the video's length."""


def encode_in_order(
    frames: Iterable[np.ndarray], encode: Callable[[np.ndarray], bytes], *, threads: int = 1
) -> Iterator[tuple[np.ndarray, bytes]]:
    """``(frame, encode(frame))`` for each frame, in the frames' order.

    With ``threads > 1`` the frames are encoded on that many threads while the caller's
    thread takes the next frames from ``frames`` (decoding stays sequential): a gain where
    the encoder releases the GIL (Pillow's JPEG and lossy WebP encoders; not its PNG and
    lossless WebP encoders, measured with ``benchmarks/bench_convert.py --one-video``).
    At most ``2 * threads`` frames are in flight, and the bytes are those of one thread
    (same encoder, one frame each).
    ``encode`` must not keep state across frames; ``frames`` must not be changed once
    yielded. Closing the iterator early drops the frames not yet encoded and waits for
    those being encoded.
    """
    if threads <= 1:
        for frame in frames:
            yield frame, encode(frame)
        return
    in_flight: collections.deque[tuple[np.ndarray, Future[bytes]]] = collections.deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="hf_lvf-encode") as pool:
        try:
            for frame in frames:
                if len(in_flight) == IN_FLIGHT_PER_THREAD * threads:
                    done, future = in_flight.popleft()
                    yield done, future.result()
                in_flight.append((frame, pool.submit(encode, frame)))
            while in_flight:
                done, future = in_flight.popleft()
                yield done, future.result()
        finally:
            for _, future in in_flight:
                future.cancel()
