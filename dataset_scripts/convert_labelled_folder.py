"""Convert a folder of labelled video clips to a lance-video-frames root, then read it back.

The folder follows the ``videofolder`` convention of ``datasets``::

    clips/
      metadata.csv          # optional: file_name,split,... (file_name relative to clips/)
      walking/a.mp4
      walking/b.webm
      running/c.mp4

Each class sub-folder becomes an integer ``label`` (the index into the sorted class
names, which the root keeps as ``label_names``); the other metadata columns become
per-video fields, and every sample carries them.

    python dataset_scripts/convert_labelled_folder.py clips/ clips_root --resize 224 --fps 8
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import hf_lvf


def main(argv: list[str] | None = None) -> hf_lvf.convert.ConversionSummary:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the videofolder-style input folder")
    parser.add_argument("root", help="the root to create")
    parser.add_argument("--resize", type=int, default=224, help="shorter side, in pixels")
    parser.add_argument("--fps", type=float, default=None, help="resample to this frame rate")
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument("--codec", choices=("webp", "jpeg", "png"), default="webp")
    parser.add_argument("--quality", type=int, default=hf_lvf.DEFAULT_QUALITY, help="0-100")
    parser.add_argument("--lossless", action="store_true", help="lossless WebP")
    parser.add_argument("--window-length", type=int, default=8, help="frames per sample")
    args = parser.parse_args(argv)

    summary = hf_lvf.convert.convert_videos(
        args.folder,
        args.root,
        resize=args.resize,
        fps=args.fps,
        workers=args.workers,
        overwrite=True,
        codec=args.codec,
        quality=args.quality,
        lossless=args.lossless,
        splits="none",  # one root: a metadata file's split column stays a field
    )
    print(
        f"{summary.num_videos} videos, {summary.num_frames} frames, "
        f"{summary.n_skipped} skipped, in {summary.seconds:.1f} s -> {summary.root}"
    )
    meta = json.loads((Path(summary.root) / "_metadata.json").read_text())
    label_names = meta.get("label_names", [])  # absent if the folder has no class folders

    # Clips of other aspect ratios keep them; resize on decode to one shape for batching.
    side = args.resize
    windows = hf_lvf.VideoWindows(
        summary.root, window_length=args.window_length, frame_size=(side, side)
    )
    sample = windows[0]
    label = sample.get("label")
    print(
        f"{len(windows)} windows of {args.window_length} frames; sample 0: "
        f"{sample['video'].shape} from {sample['filename']!r}"
        + (f", label {label} ({label_names[label]})" if label is not None else "")
    )
    return summary


if __name__ == "__main__":
    main()
