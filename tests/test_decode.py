"""The WebP decoder: pixels equal to Pillow's, sizes read from the header alone."""

from __future__ import annotations

import io

import lance
import numpy as np
import pytest
from _roots import FRAME_SIZE, foreign_videos, hf_root, make_frames, webp, write_foreign_root
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.decode import webp_canvas_size
from hf_lvf.synthetic import write_synthetic_root


def _pillow_frames(root) -> np.ndarray:
    """Every stored frame of ``root``, decoded one by one by Pillow (what hf_lvf used to do)."""
    blobs = lance.dataset(str(root)).to_table(columns=["bytes"]).column("bytes").to_pylist()
    return np.stack([np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs])


def _rgba_videos() -> list[dict]:
    """Frames stored with an alpha channel, lossy and lossless, as another tool might."""
    frames = make_frames(6, *FRAME_SIZE, seed=7)
    alpha = np.linspace(0, 255, FRAME_SIZE[0] * FRAME_SIZE[1]).astype(np.uint8)
    videos = []
    for lossless in (False, True):
        blobs = []
        for frame in frames:
            rgba = np.dstack([frame, alpha.reshape(FRAME_SIZE)])
            buf = io.BytesIO()
            Image.fromarray(rgba, "RGBA").save(buf, format="WEBP", lossless=lossless, quality=70)
            blobs.append(buf.getvalue())
        videos.append((frames, blobs))
    return videos


@pytest.mark.parametrize("kind", ["hf_lvf", "foreign", "synthetic", "odd_size", "rgba"])
def test_pixels_equal_pillow(tmp_path, kind):
    if kind == "hf_lvf":
        root = hf_root(tmp_path / "r")
    elif kind == "foreign":  # lossy and lossless frames mixed
        root = write_foreign_root(tmp_path / "r", foreign_videos())
    elif kind == "synthetic":
        root = write_synthetic_root(
            tmp_path / "r", num_videos=2, num_frames=6, frame_size=(96, 128)
        )
    elif kind == "odd_size":
        root = write_synthetic_root(tmp_path / "r", num_videos=2, num_frames=5, frame_size=(33, 47))
    else:
        videos, blobs = [], {}
        for v, (frames, encoded) in enumerate(_rgba_videos()):
            videos.append({"frames": frames, "path": f"rgba_{v}"})
            blobs.update({(v, f): blob for f, blob in enumerate(encoded)})
        root = write_foreign_root(tmp_path / "r", videos, blobs=blobs)
    want = _pillow_frames(root)
    for threads in (1, 2):
        w = VideoWindows(root, decode_threads=threads)
        got = w.read_video(np.arange(len(w)))[:, 0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size", [(1, 1), (32, 48), (33, 47), (300, 17)])
@pytest.mark.parametrize("variant", ["lossy", "lossless", "alpha", "alpha_lossless"])
def test_canvas_size_from_header(size, variant):
    height, width = size
    frame = make_frames(1, height, width, seed=2)[0]
    if variant.startswith("alpha"):
        image = Image.fromarray(np.dstack([frame, frame[..., :1]]), "RGBA")
        buf = io.BytesIO()
        image.save(buf, format="WEBP", lossless=variant.endswith("lossless"))
        blob = buf.getvalue()
        assert blob[12:16] in (b"VP8X", b"VP8L")
    else:
        blob = webp(frame, lossless=variant == "lossless")
        assert blob[12:16] == (b"VP8L" if variant == "lossless" else b"VP8 ")
    assert webp_canvas_size(blob) == (width, height)
    assert webp_canvas_size(bytearray(blob)) == (width, height)
    assert Image.open(io.BytesIO(blob)).size == (width, height)
