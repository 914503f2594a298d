"""Convert video files to a lance-video-frames root and publish it to the Hugging Face Hub.

The root is built in a local folder first (conversion is atomic: an interrupted run
leaves nothing), then pushed in one commit with its dataset card. Anyone can then
read windows straight from the Hub:

    python dataset_scripts/convert_and_push.py clips/ me/my-clips --split train --resize 224
    # later, anywhere:
    #   hf_lvf.VideoWindows("hf://datasets/me/my-clips/train", window_length=16)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import hf_lvf


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="video files, globs or a videofolder")
    parser.add_argument("repo_id", help="the dataset repo, 'namespace/name'")
    parser.add_argument("--split", default=None, help="folder in the repo, e.g. 'train'")
    parser.add_argument("--resize", type=int, default=None, help="shorter side, in pixels")
    parser.add_argument("--fps", type=float, default=None, help="resample to this frame rate")
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument("--codec", choices=("webp", "jpeg", "png"), default="webp")
    parser.add_argument("--quality", type=int, default=hf_lvf.DEFAULT_QUALITY, help="0-100")
    parser.add_argument("--lossless", action="store_true", help="lossless WebP")
    parser.add_argument(
        "--window-length", type=int, default=16, help="frames per sample, for the dataset card"
    )
    parser.add_argument("--private", action="store_true", help="create the repo private")
    parser.add_argument("--token", default=None, help="default: HF_TOKEN or `hf auth login`")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="hf_lvf_push_") as tmp:
        summary = hf_lvf.convert.convert_videos(
            args.inputs,
            Path(tmp) / "root",
            resize=args.resize,
            fps=args.fps,
            workers=args.workers,
            codec=args.codec,
            quality=args.quality,
            lossless=args.lossless,
        )
        print(f"converted {summary.num_videos} videos ({summary.n_skipped} skipped)")
        commit = hf_lvf.push_to_hub(
            summary.root,
            args.repo_id,
            path_in_repo=args.split,
            private=args.private or None,
            token=args.token,
            commit_message=f"Add {summary.num_videos} videos converted with hf_lvf",
            card_options={"window_length": args.window_length},
        )
    uri = f"hf://datasets/{args.repo_id}" + (f"/{args.split}" if args.split else "")
    print(f"pushed commit {commit.oid[:8]}: read it with hf_lvf.VideoWindows({uri!r})")
    return uri


if __name__ == "__main__":
    main()
