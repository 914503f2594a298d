"""The ``hf-lvf`` command line. The only module that prints or configures logging."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path


def _demo(args: argparse.Namespace) -> int:
    from .synthetic import write_synthetic_root
    from .windows import VideoWindows

    with tempfile.TemporaryDirectory(prefix="hf_lvf_demo_") as tmp:
        root = Path(args.root) if args.root else Path(tmp) / "demo_root"
        height, width = args.frame_size
        started = time.perf_counter()
        write_synthetic_root(
            root,
            num_videos=args.videos,
            num_frames=args.frames,
            frame_size=(height, width),
            overwrite=True,
        )
        write_s = time.perf_counter() - started
        windows = VideoWindows(root, window_length=args.window_length, hop_size=args.hop_size)
        started = time.perf_counter()
        count, sample = 0, None
        for count, sample in enumerate(windows, 1):  # noqa: B007 - the last one is shown
            pass
        read_s = time.perf_counter() - started
        rows = [
            ("root", str(root)),
            ("videos", str(len(windows.videos))),
            ("frames", str(int(windows.layout.num_frames.sum()))),
            ("window_length / hop_size", f"{args.window_length} / {args.hop_size}"),
            ("windows", str(len(windows))),
            ("write", f"{write_s:.2f} s"),
            ("windows/s (sequential)", f"{count / read_s:.1f}"),
            ("sample video shape", f"{tuple(sample['video'].shape)} {sample['video'].dtype}"),
        ]
        for extra in _demo_extras(root, args):
            rows.append(extra)
        width_col = max(len(k) for k, _ in rows)
        for key, value in rows:
            print(f"{key:<{width_col}}  {value}")
    return 0


def _demo_extras(root: Path, args: argparse.Namespace) -> list[tuple[str, str]]:
    """More rows for the demo table, from the front ends built on the core."""
    return []


def _frame_size(text: str) -> tuple[int, int]:
    try:
        height, width = (int(x) for x in text.lower().split("x"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected HxW such as 64x64, got {text!r}") from err
    return height, width


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-lvf", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="write a small synthetic root and read it back")
    demo.add_argument("--root", help="where to write it (default: a temporary folder)")
    demo.add_argument("--videos", type=int, default=4)
    demo.add_argument("--frames", type=int, default=48, help="frames per video")
    demo.add_argument("--frame-size", type=_frame_size, default=(64, 64), help="HxW")
    demo.add_argument("--window-length", type=int, default=16)
    demo.add_argument("--hop-size", type=int, default=4)
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from .errors import LVFError

    try:
        return args.func(args)
    except (LVFError, ValueError, FileExistsError, FileNotFoundError) as err:
        print(f"hf-lvf: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
