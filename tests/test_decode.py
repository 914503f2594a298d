"""The WebP decoder: pixels equal to Pillow's, sizes read from the header alone."""

from __future__ import annotations

import io

import lance
import numpy as np
import pytest
from _roots import FRAME_SIZE, foreign_videos, hf_root, make_frames, webp, write_foreign_root
from PIL import Image

from hf_lvf import VideoWindows
from hf_lvf.decode import start_decoding, webp_canvas_size
from hf_lvf.errors import FrameDecodeError
from hf_lvf.write.synthetic import write_synthetic_root


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


def test_threads_report_the_first_bad_frame_and_copy_repeats():
    frames = make_frames(40, *FRAME_SIZE, seed=3)
    blobs: list[bytes | None] = [webp(f) for f in frames]
    sizes = np.tile(FRAME_SIZE, (len(blobs), 1))
    describe = "frame {}".format
    # Frame k goes to 2k, and is copied on to 2k + 1.
    out = np.zeros((2 * len(blobs), *FRAME_SIZE, 3), np.uint8)
    copies = [[2 * k + 1] for k in range(len(blobs))]
    targets = 2 * np.arange(len(blobs))
    start_decoding(
        blobs, out, targets, expected_sizes=sizes, describe=describe, threads=2, copies=copies
    ).wait()
    want = np.stack([np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in blobs])
    np.testing.assert_array_equal(out[0::2], want)
    np.testing.assert_array_equal(out[1::2], want)
    # Bad frames far apart: threads race past the first, yet it is the one named, every time.
    blobs[37], blobs[21], blobs[9] = b"RIFF....WEBPjunk", None, blobs[9][:40]
    for _ in range(20):
        with pytest.raises(FrameDecodeError, match=r"^frame 9 is not a valid WebP image"):
            start_decoding(
                blobs, out, targets, expected_sizes=sizes, describe=describe, threads=2
            ).wait()
    blobs[9] = webp(frames[9])
    with pytest.raises(FrameDecodeError, match=r"^frame 21 has no bytes"):
        start_decoding(
            blobs, out, targets, expected_sizes=sizes, describe=describe, threads=2
        ).wait()
