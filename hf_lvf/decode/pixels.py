"""Pixels of one frame whose header is read: the decoder of its format, RGB uint8 out.

- WebP (lossy and lossless): libwebp through imagecodecs' ``webp_decode(data, out=slot)``,
  straight into the caller's array slot, without the GIL.
- JPEG of 8-bit YCbCr/RGB (what every encoder of video frames writes): libjpeg-turbo
  through imagecodecs' ``jpeg8_decode(data, out=slot)``, the same way. Measured on a
  1280x720 q90 frame (one core), 4.3 ms against 6.7 ms for Pillow's decode and copy,
  though both are libjpeg-turbo: Pillow decodes into its own image and copies out.
  Pillow is the decoder where imagecodecs has none: DCT-scaled decodes (``draft``, 1/2,
  1/4 or 1/8 of the size, libjpeg-turbo's own scaling) and the rare JPEGs that are not
  8-bit three-component (grayscale, CMYK: Pillow's ``convert("RGB")``).
- PNG: libpng through imagecodecs' ``png_decode``; 8-bit RGB straight into the slot, any
  other kind converted as OpenCV's ``IMREAD_COLOR`` (the reference reader) does: gray
  repeated into three channels, alpha dropped, palette expanded, 16-bit to its high byte.
"""

from __future__ import annotations

import io

import imagecodecs
import numpy as np
from PIL import Image

from ..plan import Crop, crop_box
from .headers import FrameHeader

# What each codec raises for bytes it cannot decode.
CODEC_ERRORS = (
    imagecodecs.WebpError,
    imagecodecs.Jpeg8Error,
    imagecodecs.PngError,
    ValueError,
    RuntimeError,
    OSError,
    SyntaxError,
)
_NAMES = {"webp": "WebP", "jpeg": "JPEG", "png": "PNG"}
_DCT_SCALES = (8, 4, 2)


def format_name(header: FrameHeader) -> str:
    return _NAMES[header.format]


def decode_into(blob: bytes, header: FrameHeader, slot: np.ndarray) -> None:
    """Decode a frame of ``header``'s size into ``slot``, ``(height, width, 3)`` uint8."""
    if header.format == "webp":
        # hasalpha=False: RGB even where a tool stored an alpha channel (dropped, as
        # Pillow's convert("RGB") drops it).
        imagecodecs.webp_decode(blob, out=slot, hasalpha=False)
    elif header.format == "jpeg" and header.plain:
        imagecodecs.jpeg8_decode(blob, out=slot)
    elif header.format == "png" and header.plain:
        imagecodecs.png_decode(blob, out=slot)
    else:
        slot[...] = _rgb(blob, header)


def _rgb(blob: bytes, header: FrameHeader) -> np.ndarray:
    """``(H, W, 3)`` uint8 of a JPEG or PNG that is not 8-bit RGB."""
    if header.format == "jpeg":
        with Image.open(io.BytesIO(blob)) as image:
            return np.asarray(image.convert("RGB"))
    array = imagecodecs.png_decode(blob)
    if array.dtype == np.uint16:
        array = (array >> 8).astype(np.uint8)
    if array.ndim == 2:
        array = array[..., None]
    if array.shape[2] in (1, 2):  # gray, gray + alpha
        return np.repeat(array[..., :1], 3, axis=2)
    return array[..., :3]


def dct_scale(height: int, width: int, out_height: int, out_width: int, crop: Crop) -> int:
    """The largest JPEG DCT scale divisor (8, 4, 2; else 1) whose decode still covers
    ``out_height x out_width`` where the frame is cut for it (``crop``)."""
    box = crop_box(height, width, out_height, out_width, crop)
    region_w, region_h = (width, height) if box is None else (box[2] - box[0], box[3] - box[1])
    for scale in _DCT_SCALES:
        if region_w / scale >= out_width and region_h / scale >= out_height:
            return scale
    return 1


def decode_resized(
    blob: bytes,
    header: FrameHeader,
    out_size: tuple[int, int],
    crop: Crop,
    *,
    decode_scaled: bool,
) -> np.ndarray:
    """A frame decoded and resized to ``out_size`` (bilinear, cut as ``crop`` says); JPEG
    decodes DCT-scaled first where the scaled frame still covers ``out_size``."""
    out_h, out_w = out_size
    height, width = header.height, header.width
    scale = 1
    if decode_scaled and header.format == "jpeg":
        scale = dct_scale(height, width, out_h, out_w, crop)
    if scale > 1:
        image = Image.open(io.BytesIO(blob))
        image.draft("RGB", (max(1, width // scale), max(1, height // scale)))
        # An RGB JPEG decodes as it is (convert would copy it: 10% of a scaled read).
        image = image.convert("RGB") if image.mode != "RGB" else image
    else:
        slot = np.empty((height, width, 3), np.uint8)
        decode_into(blob, header, slot)
        image = Image.fromarray(slot, "RGB")
    box = crop_box(image.height, image.width, out_h, out_w, crop)
    return np.asarray(image.resize((out_w, out_h), Image.Resampling.BILINEAR, box=box))
