"""What a stored frame is, from its first bytes and its header alone: format and size.

One table from signature to format (as Pillow's ``_accept`` tests and torchvision's
``decode_image`` do): ``RIFF....WEBP`` is WebP, ``FF D8 FF`` JPEG, ``89 50 4E 47`` PNG.
``_metadata.json``'s ``encoding`` is only a hint that other tools write loosely, so it
is never asked. Each format's size is read from its header (WebP's VP8/VP8L/VP8X chunk,
JPEG's SOFn marker, PNG's IHDR chunk) so that it can be checked against the size the
video declares before a pixel is decoded: a frame declaring a huge canvas costs nothing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal

from ..errors import ParameterError

FrameFormat = Literal["webp", "jpeg", "png"]

KNOWN_FORMATS = "WebP (RIFF....WEBP), JPEG (FF D8 FF) and PNG (89 50 4E 47)"

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
# VP8X flags (WebP container specification, "Extended file format").
_ANIMATION_FLAG = 0x02
_VP8_START_CODE = b"\x9d\x01\x2a"
_VP8L_SIGNATURE = 0x2F
_U32 = struct.Struct("<I")
_VP8_SIZE = struct.Struct("<HH")
_CHUNK_HEADER = struct.Struct("<4sI")
_BE16 = struct.Struct(">H")
_IHDR = struct.Struct(">4sIIBB")  # "IHDR", width, height, bit depth, colour type
# JPEG start-of-frame markers: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field: TEM, RST0-7, SOI, EOI.
_STANDALONE = frozenset([0x01, *range(0xD0, 0xD8), 0xD8, 0xD9])
_SOS = 0xDA
_EOI = b"\xff\xd9"
# Bytes after the end-of-image marker that some tools pad a file with.
_JPEG_TAIL = 64


@dataclass(frozen=True)
class FrameHeader:
    """What a frame's header says.

    Attributes:
        format: ``"webp"``, ``"jpeg"`` or ``"png"``.
        width, height: the image's size in pixels.
        plain: the pixels decode straight to 8-bit RGB (JPEG: 8-bit with 3 components;
            PNG: 8-bit RGB; WebP: always), so the fast path of that format applies.
    """

    format: FrameFormat
    width: int
    height: int
    plain: bool = True


def frame_format(blob: bytes) -> FrameFormat | None:
    """The format a frame's first bytes announce, ``None`` for none known."""
    if blob[:4] == b"RIFF" and blob[8:12] == b"WEBP":
        return "webp"
    if blob[:3] == _JPEG_SIGNATURE:
        return "jpeg"
    if blob[:4] == _PNG_SIGNATURE[:4]:
        return "png"
    return None


def read_header(blob: bytes) -> FrameHeader:
    """The format and size of one frame, from its header only.

    Raises:
        ValueError: the bytes are in no known format, or their header is truncated or
            corrupt (the message says why, to follow "frame ... of video ...").
    """
    kind = frame_format(blob)
    if kind == "webp":
        return FrameHeader("webp", *webp_canvas_size(blob))
    if kind == "jpeg":
        return _jpeg_header(blob)
    if kind == "png":
        return _png_header(blob)
    return _unknown(blob)


def _unknown(blob: bytes) -> FrameHeader:
    if blob[:4] == b"RIFF":  # the one prefix that used to mean "WebP" by itself
        raise ParameterError(
            "is not a valid WebP image: no RIFF/WEBP signature; a row must be one of "
            f"{KNOWN_FORMATS}"
        )
    raise ParameterError(
        f"is in no known image format (first bytes {bytes(blob[:8]).hex(' ')!r}); "
        f"a row must be one of {KNOWN_FORMATS}"
    )


def _jpeg_header(blob: bytes) -> FrameHeader:
    """Walks the marker segments up to the first SOFn (before any scan)."""
    position, end = 2, len(blob)
    while True:
        while position < end and blob[position] == 0xFF:  # fill bytes, then the marker
            position += 1
        if position >= end or blob[position - 1] != 0xFF:
            raise ParameterError(
                "is not a valid JPEG image: truncated or corrupt before its header"
            )
        marker = blob[position]
        position += 1
        if marker in _STANDALONE:
            continue
        if position + 2 > end:
            raise ParameterError("is not a valid JPEG image: truncated before its frame header")
        length = _BE16.unpack_from(blob, position)[0]
        if marker in _SOF_MARKERS:
            if length < 8 or position + 8 > end:
                raise ParameterError("is not a valid JPEG image: truncated SOF frame header")
            precision = blob[position + 2]
            height, width = struct.unpack_from(">HH", blob, position + 3)
            components = blob[position + 7]
            if height == 0 or width == 0:
                raise ParameterError(
                    f"is not a valid JPEG image: its frame header declares {width}x{height} (WxH)"
                )
            if _EOI not in blob[-_JPEG_TAIL:]:
                # libjpeg decodes a file cut in its scan with a mere warning, the rest gray.
                raise ParameterError(
                    "is not a valid JPEG image: truncated (no end-of-image marker)"
                )
            plain = precision == 8 and components == 3 and marker in (0xC0, 0xC1, 0xC2)
            return FrameHeader("jpeg", width, height, plain)
        if marker == _SOS or length < 2:
            raise ParameterError(
                "is not a valid JPEG image: no frame header (SOFn) before its scan"
            )
        position += length


def _png_header(blob: bytes) -> FrameHeader:
    if blob[:8] != _PNG_SIGNATURE:
        raise ParameterError("is not a valid PNG image: corrupt signature")
    if len(blob) < 8 + 4 + _IHDR.size:
        raise ParameterError("is not a valid PNG image: truncated before its IHDR chunk")
    kind, width, height, depth, colour = _IHDR.unpack_from(blob, 12)
    if kind != b"IHDR" or width == 0 or height == 0:
        raise ParameterError("is not a valid PNG image: no IHDR chunk first")
    return FrameHeader("png", width, height, plain=depth == 8 and colour == 2)


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
        raise ParameterError("is not a valid WebP image: no RIFF/WEBP signature")
    riff_end = 8 + _U32.unpack_from(blob, 4)[0]
    if riff_end > len(blob):
        raise ParameterError(
            f"is not a valid WebP image: truncated (its RIFF header declares {riff_end} bytes, "
            f"it has {len(blob)})"
        )
    fourcc, start, size = _chunk(blob, 12, riff_end)
    if fourcc == b"VP8 ":
        if size < 10 or blob[start + 3 : start + 6] != _VP8_START_CODE or blob[start] & 1:
            raise ParameterError("is not a valid WebP image: corrupt VP8 key frame header")
        width, height = _VP8_SIZE.unpack_from(blob, start + 6)
        return width & 0x3FFF, height & 0x3FFF
    if fourcc == b"VP8L":
        if size < 5 or blob[start] != _VP8L_SIGNATURE:
            raise ParameterError("is not a valid WebP image: corrupt VP8L header")
        bits = _U32.unpack_from(blob, start + 1)[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8X":
        if size < 10:
            raise ParameterError("is not a valid WebP image: corrupt VP8X header")
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
            raise ParameterError("is an animated WebP image; a row must hold one still frame")
        width = int.from_bytes(blob[start + 4 : start + 7], "little") + 1
        height = int.from_bytes(blob[start + 7 : start + 10], "little") + 1
        return width, height
    raise ParameterError(f"is not a valid WebP image: unknown first chunk {fourcc!r}")


def _chunk(blob: bytes, position: int, end: int) -> tuple[bytes, int, int]:
    """``(fourcc, payload start, payload size)`` of the chunk at ``position``."""
    if position + 8 > end:
        raise ParameterError("is not a valid WebP image: truncated before its image header")
    fourcc, size = _CHUNK_HEADER.unpack_from(blob, position)
    start = position + 8
    if start + size > end:
        raise ParameterError(
            f"is not a valid WebP image: truncated ({fourcc!r} chunk of {size} bytes, "
            f"{end - start} left)"
        )
    return fourcc, start, size
