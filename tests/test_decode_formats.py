"""Rows in JPEG and PNG as well as WebP: told by their first bytes, sized from their headers,
decoded to RGB uint8 whatever their colour type. Every row here is made by Pillow (or by
hand with zlib), never by hf_lvf's writer."""

from __future__ import annotations

import io
import re
import struct
import zlib

import numpy as np
import pytest
from _roots import FRAME_SIZE, make_frames, webp, write_foreign_root
from PIL import Image

from hf_lvf import HfLvfConfig, VideoWindows
from hf_lvf.decode import dct_scale, read_header
from hf_lvf.errors import FrameDecodeError


def _save(image: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt, **options)
    return buf.getvalue()


def jpeg(frame: np.ndarray, **options) -> bytes:
    return _save(Image.fromarray(frame, "RGB"), "JPEG", quality=90, **options)


def _pillow(blob: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(blob)).convert("RGB"))


def _png_by_hand(array: np.ndarray, colour_type: int) -> bytes:
    """A PNG of ``array`` (uint8 or big-endian uint16 samples), built with zlib: Pillow
    writes no 16-bit RGB PNG."""
    height, width = array.shape[:2]
    depth = 16 if array.dtype == np.uint16 else 8
    rows = array.astype(array.dtype.newbyteorder(">")).reshape(height, -1).tobytes()
    stride = len(rows) // height
    raw = b"".join(b"\0" + rows[i * stride : (i + 1) * stride] for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _root(tmp_path, blobs_of_video, *, encoding="webp"):
    """One video of ``len(blobs)`` frames of FRAME_SIZE, its rows the given bytes."""
    frames = make_frames(len(blobs_of_video), *FRAME_SIZE, seed=4)
    videos = [{"frames": frames, "path": "clip.mp4"}]
    blobs = {(0, f): b for f, b in enumerate(blobs_of_video)}
    extra = {} if encoding is None else {"encoding": encoding}
    return write_foreign_root(tmp_path / "r", videos, blobs=blobs, top_level_extra=extra)


@pytest.mark.parametrize("encoding", ["webp", "jpeg", None])
def test_mixed_rows_read_by_their_first_bytes(tmp_path, encoding):
    frames = make_frames(8, *FRAME_SIZE, seed=4)
    blobs = [
        jpeg(frames[0]),
        _save(Image.fromarray(frames[1]), "PNG"),
        webp(frames[2]),
        webp(frames[3], lossless=True),
        jpeg(frames[4], progressive=True),
        _save(Image.fromarray(frames[5]), "PNG", compress_level=0),
        jpeg(frames[6], subsampling=0),
        webp(frames[7], quality=30),
    ]
    root = _root(tmp_path, blobs, encoding=encoding)
    got = VideoWindows(root, window_length=8, decode_threads=2).read_video([0])[0]
    np.testing.assert_array_equal(got, np.stack([_pillow(b) for b in blobs]))
    # The lossless rows are the frames themselves.
    for f in (1, 3, 5):
        np.testing.assert_array_equal(got[f], frames[f])


@pytest.mark.parametrize(
    ("make", "want"),
    [
        # Gray and CMYK JPEG: Pillow's convert("RGB").
        (lambda f: _save(Image.fromarray(f).convert("L"), "JPEG"), None),
        (lambda f: _save(Image.fromarray(f).convert("CMYK"), "JPEG"), None),
        # PNG: alpha dropped, palette expanded, gray repeated into 3 channels.
        (lambda f: _save(Image.fromarray(np.dstack([f, f[..., :1]]), "RGBA"), "PNG"), "rgb"),
        (lambda f: _save(Image.fromarray(f).convert("P"), "PNG"), None),
        (lambda f: _save(Image.fromarray(f).convert("L"), "PNG"), "gray"),
        (lambda f: _save(Image.fromarray(f).convert("LA"), "PNG"), "gray"),
        # 16-bit: the high byte of each sample.
        (lambda f: _save(Image.fromarray(f[..., 0].astype(np.uint16) * 257), "PNG"), "red"),
        (lambda f: _png_by_hand(f.astype(np.uint16) << 8 | 0xAB, 2), "rgb"),
        (lambda f: _png_by_hand(np.dstack([f, f[..., :1]]).astype(np.uint16) * 257, 6), "rgb"),
    ],
    ids=["jpeg-gray", "jpeg-cmyk", "png-rgba", "png-palette", "png-gray", "png-gray-alpha",
         "png-gray16", "png-rgb16", "png-rgba16"],
)  # fmt: skip
def test_every_colour_type_becomes_rgb_uint8(tmp_path, make, want):
    frame = make_frames(1, *FRAME_SIZE, seed=9)[0]
    blob = make(frame)
    got = VideoWindows(_root(tmp_path, [blob, blob])).read_video([0])[0, 0]
    assert got.dtype == np.uint8 and got.shape == (*FRAME_SIZE, 3)
    gray = np.asarray(Image.fromarray(frame).convert("L"))
    expected = {
        None: _pillow(blob) if want is None else None,
        "rgb": frame,
        "gray": np.repeat(gray[..., None], 3, axis=2),
        "red": np.repeat(frame[..., :1], 3, axis=2),
    }[want]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("size", [(1, 1), (33, 47), (300, 17), (720, 1280)])
@pytest.mark.parametrize(
    "kind", ["jpeg", "jpeg-progressive", "jpeg-gray", "jpeg-cmyk", "png", "png-palette"]
)
def test_size_from_header(size, kind):
    height, width = size
    image = Image.fromarray(make_frames(1, height, width, seed=2)[0])
    if kind == "jpeg-gray":
        image = image.convert("L")
    if kind == "jpeg-cmyk":
        image = image.convert("CMYK")
    if kind == "png-palette":
        image = image.convert("P")
    fmt = "PNG" if kind.startswith("png") else "JPEG"
    # An Exif block before the frame header, as cameras write it.
    blob = _save(image, fmt, progressive=kind == "jpeg-progressive", exif=b"Exif\0\0" + bytes(40))
    header = read_header(blob)
    assert (header.format, header.width, header.height) == (fmt.lower(), width, height)
    assert header.plain == (kind in ("jpeg", "jpeg-progressive", "png"))


def _declared(blob: bytes, width: int, height: int) -> bytes:
    """``blob`` with the size in its header replaced (JPEG SOF0 or PNG IHDR)."""
    if blob[:3] == b"\xff\xd8\xff":
        at = blob.index(b"\xff\xc0") + 5
        return blob[:at] + struct.pack(">HH", height, width) + blob[at + 4 :]
    return blob[:16] + struct.pack(">II", width, height) + blob[24:]


_MATCH = re.escape("frame 1 of video 0 ('clip.mp4', Lance row 1) in root ")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda f: _save(Image.fromarray(f), "GIF"),
            r"is in no known image format \(first bytes '47 49 46 38 37 61 30 00'\); a row "
            r"must be one of WebP \(RIFF....WEBP\), JPEG \(FF D8 FF\) and PNG \(89 50 4E 47\)",
        ),
        (lambda f: _save(Image.fromarray(f), "BMP"), "is in no known image format"),
        (lambda f: jpeg(f[:16]), r"decodes to 48x16 \(WxH\) but its video declares 48x32"),
        (
            lambda f: _save(Image.fromarray(np.ascontiguousarray(f[:, :20])), "PNG"),
            r"decodes to 20x32 \(WxH\) but its video declares 48x32",
        ),
        # A huge declared canvas is refused from the header, before anything is allocated.
        (lambda f: _declared(jpeg(f), 65535, 65535), "decodes to 65535x65535 "),
        (
            lambda f: _declared(_save(Image.fromarray(f), "PNG"), 2**31 - 1, 2**31 - 1),
            "decodes to 2147483647x2147483647 ",
        ),
        (lambda f: jpeg(f)[:3], "is not a valid JPEG image: truncated"),
        # Cut inside the scan: libjpeg would pad the frame in gray with a mere warning.
        (lambda f: jpeg(f)[:-200], "is not a valid JPEG image: truncated .no end-of-image"),
        (lambda f: jpeg(f)[:-1], "is not a valid JPEG image: truncated .no end-of-image"),
        (lambda f: b"\xff\xd8\xff\xda\x00\x02", "is not a valid JPEG image: no frame header"),
        (lambda f: _save(Image.fromarray(f), "PNG")[:20], "is not a valid PNG image: truncated"),
        (lambda f: _save(Image.fromarray(f), "PNG")[:60], "is not a valid PNG image: "),
    ],
    ids=["gif", "bmp", "jpeg-size", "png-size", "jpeg-huge", "png-huge", "jpeg-cut-header",
         "jpeg-cut-scan", "jpeg-cut-eoi", "jpeg-no-sof", "png-cut-header", "png-cut-data"],
)  # fmt: skip
def test_bad_row_is_named(tmp_path, make, problem):
    frame = make_frames(1, *FRAME_SIZE, seed=1)[0]
    root = _root(tmp_path, [jpeg(frame), make(frame), jpeg(frame)])
    with pytest.raises(FrameDecodeError, match=_MATCH + re.escape(repr(str(root))) + " " + problem):
        VideoWindows(root, window_length=3).read_video([0])
    assert VideoWindows(root).read_video([2]).shape == (1, 1, *FRAME_SIZE, 3)


@pytest.mark.parametrize(
    ("stored", "out", "crop", "scale"),
    [
        ((720, 1280), (224, 224), "center", 2),  # the 720x720 middle: 360 >= 224 > 180
        ((720, 1280), (180, 320), "none", 4),
        ((720, 1280), (90, 160), "none", 8),
        ((720, 1280), (45, 80), "none", 8),  # no scale below 1/8
        ((720, 1280), (360, 640), "none", 2),
        ((719, 1280), (360, 640), "none", 1),  # 359.5 rows at 1/2 would not cover 360
        ((720, 1280), (720, 1280), "none", 1),
    ],
)
def test_dct_scale_is_the_smallest_that_covers(stored, out, crop, scale):
    assert dct_scale(*stored, *out, crop) == scale


def test_jpeg_decodes_dct_scaled_unless_told_not_to(tmp_path):
    frames = make_frames(4, 64, 96, seed=5)
    blobs = [jpeg(f) for f in frames]
    root = write_foreign_root(
        tmp_path / "r", [{"frames": frames, "path": "clip.mp4"}], blobs=dict(enumerate_blobs(blobs))
    )

    def pillow(blob, draft):
        image = Image.open(io.BytesIO(blob))
        if draft:
            image.draft("RGB", (48, 32))
        return np.asarray(image.convert("RGB").resize((48, 32), Image.Resampling.BILINEAR))

    scaled = VideoWindows(root, window_length=4, frame_size=(32, 48)).read_video([0])[0]
    full = VideoWindows(root, window_length=4, frame_size=(32, 48), decode_scaled=False)
    full = full.read_video([0])[0]
    # At exactly half the size, the DCT-scaled decode is the frame: no resize is left to do.
    np.testing.assert_array_equal(scaled, np.stack([pillow(b, True) for b in blobs]))
    np.testing.assert_array_equal(full, np.stack([pillow(b, False) for b in blobs]))
    assert not np.array_equal(scaled, full)
    with pytest.raises(ValueError, match="decode_scaled must be True or False, got 'no'"):
        VideoWindows(root, decode_scaled="no")
    with pytest.raises(ValueError, match="decode_scaled must be True or False, got 0"):
        HfLvfConfig(name="x", decode_scaled=0)


def enumerate_blobs(blobs):
    return (((0, f), b) for f, b in enumerate(blobs))
