"""The ``hf-lvf`` command line: runs the commands whose arguments :mod:`hf_lvf.cli.args`
defines. The only module that prints or configures logging."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time

from ..errors import LVFError
from .args import build_parser

# What a command prints as one line ("hf-lvf: error: ...") and exits 2 for; anything else is a
# bug and keeps its traceback.
_USER_ERRORS = (
    LVFError,
    ValueError,
    IndexError,
    FileExistsError,
    FileNotFoundError,
    BlockingIOError,
)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    options = ("videos", "frames", "frame_size", "window_length", "hop_size")
    _print_rows(run_demo(args.root, **{name: getattr(args, name) for name in options}))
    return 0


def _convert(args: argparse.Namespace) -> int:
    import warnings

    from ..convert import convert_videos
    from ..errors import SkippedVideoWarning

    with warnings.catch_warnings():
        # The summary lists the skipped files; no need to print each warning too.
        warnings.simplefilter("ignore", SkippedVideoWarning)
        try:
            summary = convert_videos(
                args.inputs,
                args.root,
                codec=args.codec,
                quality=args.quality,
                lossless=args.lossless,
                fidelity=args.fidelity,
                resize=args.resize,
                crop=args.crop,
                fps=args.fps,
                workers=args.workers,
                on_error=args.on_error,
                mode="append" if args.append else "overwrite" if args.overwrite else "create",
                progress=not args.no_progress,
                storage_options=args.storage_options,
                camera=args.camera[0] if args.camera and len(args.camera) == 1 else args.camera,
                spans=args.spans,
                frame_values=args.frame_values,
                splits=args.splits,
            )
        except KeyboardInterrupt:
            what = "the root is as it was" if args.append else "nothing was written"
            print(f"hf-lvf: interrupted; {what}", file=sys.stderr)
            return 130
    rows = [
        ("root", str(summary.root)),
        ("videos appended" if args.append else "videos", str(summary.num_videos)),
        ("frames appended" if args.append else "frames", str(summary.num_frames)),
        ("skipped", str(summary.n_skipped)),
        ("time", f"{summary.seconds:.2f} s"),
        ("frames/s", f"{summary.frames_per_second:.1f}"),
    ]
    rows[1:1] = [
        (f"split {n}", f"{s.root} ({s.num_videos} video{'s' * (s.num_videos != 1)})")
        for n, s in summary.splits.items()
    ]
    _print_rows(rows)
    for item in summary.skipped:
        print(f"  skipped {item.path}: {item.reason}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from ..layout import read_layout
    from ..write.merge import merge_roots

    started = time.perf_counter()
    options = args.storage_options
    dest = merge_roots(args.roots, args.dest, overwrite=args.overwrite, storage_options=options)
    layout = read_layout(str(dest), storage_options=options)
    rows = [
        ("root", str(dest)),
        ("videos", str(len(layout))),
        ("frames", str(layout.num_rows)),
        ("time", f"{time.perf_counter() - started:.2f} s"),
    ]
    _print_rows(rows)
    return 0


def _card_options(args: argparse.Namespace) -> dict:
    return {
        "license": args.license,
        "pretty_name": args.pretty_name,
        "window_length": args.window_length,
        "frame_skip": args.frame_skip,
        "hop_size": args.hop_size,
    }


def _push(args: argparse.Namespace) -> int:
    from ..publish import push_to_hub

    commit = push_to_hub(
        args.root,
        args.repo_id,
        path_in_repo=args.path_in_repo,
        revision=args.revision,
        private=True if args.private else None,
        token=args.token,
        commit_message=args.commit_message,
        card_options=_card_options(args),
        storage_options=args.storage_options,
    )
    print(f"commit  {commit.oid}")
    print(f"url     {commit.commit_url}")
    return 0


def _card(args: argparse.Namespace) -> int:
    from ..card import write_card

    written = write_card(
        args.root,
        args.output,
        repo_id=args.repo_id,
        path_in_repo=args.path_in_repo,
        preview=not args.no_preview,
        storage_options=args.storage_options,
        **_card_options(args),
    )
    print(f"card     {written.card}")
    if written.preview is not None:
        print(f"preview  {written.preview}")
    return 0


def _info(args: argparse.Namespace) -> int:
    import json

    from ..card.describe import describe, format_description

    described = describe(
        args.root,
        revision=args.revision,
        token=args.token,
        storage_options=args.storage_options,
        **_window_options(args),
    )
    print(json.dumps(described, indent=2) if args.json else format_description(described))
    return 0


def _show(args: argparse.Namespace) -> int:
    from ..card.preview import describe_sample, frame_duration_ms, save_window
    from ..read.windows import VideoWindows

    windows = VideoWindows(
        args.root,
        frame_size=args.frame_size,
        crop=args.crop,
        decode_scaled=args.decode_scaled,
        revision=args.revision,
        token=args.token,
        storage_options=args.storage_options,
        sampling=args.sampling,
        frame_fields=args.frame_fields,
        frame_offsets=dict(args.frame_offsets or ()) or None,
        delta_timestamps=dict(args.delta_timestamps or ()) or None,
        **_window_options(args),
    )
    sample = save_window(windows, args.index, args.output, fps=args.fps, lossless=args.lossless)
    frames, (height, width) = len(sample["video"]), windows.frame_size
    written = f"{args.output} ({frames} frames of {height}x{width}"
    if not str(args.output).lower().endswith(".png"):
        written += f", {frame_duration_ms(windows, sample['video_idx'], args.fps)} ms each"
    _print_rows([("written", written + ")"), *describe_sample(sample)])
    return 0


def _print_rows(rows: list[tuple[str, str]]) -> None:
    width_col = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width_col}}  {value}")


def _window_options(args: argparse.Namespace) -> dict:
    names = ("window_length", "frame_skip", "hop_size", "min_video_frames", "windows_in")
    return {name: getattr(args, name) for name in names}


def _add_proxy(args: argparse.Namespace) -> int:
    from ..write.proxies import add_proxy

    started = time.perf_counter()
    root = add_proxy(
        args.root,
        args.size,
        codec=args.codec,
        quality=args.quality,
        name=args.name,
        storage_options=args.storage_options,
    )
    rows = [
        ("root", str(root)),
        ("stream", args.name or f"proxy_{args.size}"),
        ("time", f"{time.perf_counter() - started:.2f} s"),
    ]
    _print_rows(rows)
    return 0


_COMMANDS = {
    "info": _info,
    "show": _show,
    "convert": _convert,
    "merge": _merge,
    "add-proxy": _add_proxy,
    "card": _card,
    "push": _push,
    "demo": _demo,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return _COMMANDS[args.command](args)
    except _USER_ERRORS as err:
        print(f"hf-lvf: error: {in_flags(str(err))}", file=sys.stderr)
        return 2


# The library's messages name Python arguments; the command line's user knows flags.
_FLAGS = (
    (re.compile(r"overwrite=True(?: \(mode='overwrite'\))?"), "--overwrite"),
    (re.compile(r"mode='append'"), "--append"),
    (re.compile(r"\bframe_size=\(H, W\)"), "--frame-size HxW"),
    (re.compile(r"\bframe_size=\((\d+), (\d+)\)"), r"--frame-size \1x\2"),
    (re.compile(r"\bresize=(\w+)"), r"--resize \1"),
    (re.compile(r"\bcrop='(\w+)'"), r"--crop \1"),
    (re.compile(r"\bsplits='(\w+)'"), r"--splits \1"),
    (re.compile(r"\bwindow_length=(\d+)"), r"--window-length \1"),
    (re.compile(r"\bresize= "), "--resize "),
    (re.compile(r"(--[\w-]+(?: \S+)?), (?=--)"), r"\1 "),  # "--resize 224 --crop center"
)


def in_flags(message: str) -> str:
    """``message`` with the Python arguments it names written as the command line's flags."""
    for pattern, flag in _FLAGS:
        message = pattern.sub(flag, message)
    return message


if __name__ == "__main__":
    sys.exit(main())
