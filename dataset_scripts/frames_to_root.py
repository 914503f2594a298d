"""Build a lance-video-frames root from frames already on disk (PNG or JPEG files).

One folder per video, its image files sorted by name giving the frame order; an
optional level of class folders above them gives a ``label``::

    frames/
      walking/clip_a/000001.png  000002.png ...
      running/clip_b/000001.jpg ...

Frames are read one at a time while they are written, so memory does not grow with
the length of a video.

    python dataset_scripts/frames_to_root.py frames/ frames_root --quality 80
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

import hf_lvf

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg"}


def read_frames(folder: Path) -> Iterator[np.ndarray]:
    for file in sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES):
        with Image.open(file) as image:
            yield np.asarray(image.convert("RGB"))


def video_folders(root: Path) -> list[Path]:
    """Folders that directly hold image files, sorted by their path."""
    return sorted(
        {p.parent for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES},
        key=lambda p: p.relative_to(root).as_posix(),
    )


def codec_options(args: argparse.Namespace) -> dict:
    return {"codec": args.codec, "quality": args.quality, "lossless": args.lossless}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("frames", help="folder of per-video frame folders")
    parser.add_argument("root", help="the root to create")
    parser.add_argument("--codec", choices=("webp", "jpeg", "png"), default="webp")
    parser.add_argument("--quality", type=int, default=hf_lvf.DEFAULT_QUALITY, help="0-100")
    parser.add_argument("--lossless", action="store_true", help="lossless WebP")
    args = parser.parse_args(argv)

    top = Path(args.frames)
    folders = video_folders(top)
    parents = [f.parent.relative_to(top).as_posix() for f in folders]
    # Labels only when every video folder sits in a class folder.
    classes = sorted(set(parents)) if "." not in parents else []
    videos = (
        (
            folder.relative_to(top).as_posix(),
            read_frames(folder),
            {"label": classes.index(parent)} if classes else None,
        )
        for folder, parent in zip(folders, parents, strict=True)
    )
    root = hf_lvf.write.write_frames(args.root, videos, overwrite=True, **codec_options(args))
    layout = hf_lvf.read_layout(str(root))
    print(f"{len(layout.videos)} videos, {int(layout.num_frames.sum())} frames -> {root}")
    if classes:
        print("labels: " + ", ".join(f"{i}={name}" for i, name in enumerate(classes)))
    return root


if __name__ == "__main__":
    main()
