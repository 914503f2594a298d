"""Real video files for the converter's tests, written with PyAV from synthetic frames."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from hf_lvf.write.synthetic import synthetic_frames

# (codec, pixel format, encoder options) per container ending. H.264 in 4:2:0 needs even
# sizes, so odd-sized clips use VP9, MJPEG or H.264 in 4:4:4 (which accept any size).
CODECS = {
    ".mp4": ("libx264", "yuv420p", {"preset": "ultrafast"}),
    ".mov": ("libx264", "yuv420p", {"preset": "ultrafast"}),
    ".mkv": ("libx264", "yuv444p", {"preset": "ultrafast"}),
    ".webm": ("libvpx-vp9", "yuv420p", {"deadline": "realtime", "cpu-used": "8"}),
    ".avi": ("mjpeg", "yuvj420p", {}),
}


def write_video(
    path: str | Path,
    num_frames: int = 12,
    size: tuple[int, int] = (48, 64),
    *,
    fps: int = 30,
    seed: int = 0,
    codec: str | None = None,
    pix_fmt: str | None = None,
    times: Sequence[float] | None = None,
) -> Path:
    """Write ``num_frames`` synthetic frames of ``size`` (H, W) to ``path``.

    The codec follows the file ending (see ``CODECS``) unless given. ``times`` gives
    each frame's presentation time in seconds (a variable frame rate); otherwise
    frames are ``1 / fps`` apart.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    default_codec, default_fmt, options = CODECS[path.suffix]
    height, width = size
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec or default_codec, rate=fps)
        stream.width, stream.height = width, height
        stream.pix_fmt = pix_fmt or default_fmt
        stream.options = dict(options) if codec is None else {}
        if times is not None:
            stream.codec_context.time_base = Fraction(1, 1000)
        for i, array in enumerate(synthetic_frames(num_frames, height, width, seed=seed)):
            frame = av.VideoFrame.from_ndarray(array, format="rgb24")
            if times is not None:
                frame.pts = round(times[i] * 1000)
                frame.time_base = Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def write_audio_only(path: str | Path, seconds: float = 0.5) -> Path:
    """An MP4 holding one AAC stream of silence and no video."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = 16000
    with av.open(str(path), "w") as container:
        stream = container.add_stream("aac", rate=rate)
        for i in range(int(seconds * rate) // 1024):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = rate, i * 1024
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def truncate(path: str | Path, share: float = 0.5) -> Path:
    """Cut ``path`` to ``share`` of its bytes, in place."""
    path = Path(path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * share)])
    return path


def decode_rgb(path: str | Path) -> list[np.ndarray]:
    """Every frame of ``path`` as decoded by PyAV, RGB: what the converter starts from."""
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def decode_scaled(path: str | Path, size: tuple[int, int], *, shrink: bool) -> list[np.ndarray]:
    """Every frame of ``path`` scaled to ``size`` (H, W) by swscale, RGB, as the converter
    scales: area averaging when shrinking, bicubic when enlarging."""
    height, width = size
    interpolation = "AREA" if shrink else "BICUBIC"
    with av.open(str(path)) as container:
        return [
            f.to_ndarray(format="rgb24", height=height, width=width, interpolation=interpolation)
            for f in container.decode(video=0)
        ]


def webp_roundtrip(frame: np.ndarray, quality: int = 90) -> np.ndarray:
    """``frame`` after a WebP encode and decode with Pillow: what a root stores for it."""
    buf = io.BytesIO()
    Image.fromarray(frame, "RGB").save(buf, format="WEBP", quality=quality)
    return np.asarray(Image.open(buf).convert("RGB"))


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def make_labelled_folder(
    folder: str | Path,
    *,
    classes: Sequence[str] = ("cat", "dog"),
    per_class: int = 2,
    num_frames: int = 10,
    size: tuple[int, int] = (32, 48),
    ext: str = ".mp4",
    metadata: bool = True,
) -> Path:
    """``folder/<class>/clip_<i><ext>`` plus a ``metadata.csv`` with a ``split`` and a
    ``quality_score`` per clip; clip ``i`` of a class has ``num_frames + i`` frames."""
    folder = Path(folder)
    rows = []
    seed = 0
    for name in classes:
        for i in range(per_class):
            rel = f"{name}/clip_{i}{ext}"
            write_video(folder / rel, num_frames + i, size, seed=seed)
            rows.append({"file_name": rel, "split": "train" if i else "val", "score": 0.5 + seed})
            seed += 1
    if metadata:
        with open(folder / "metadata.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["file_name", "split", "score"])
            writer.writeheader()
            writer.writerows(rows)
    return folder
