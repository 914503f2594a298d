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
    import datasets
    import numpy as np

    from .windows import VideoWindows

    params = {"window_length": args.window_length, "hop_size": args.hop_size}
    rows = []
    with tempfile.TemporaryDirectory(prefix="hf_lvf_demo_cache_") as cache_dir:
        for streaming in (True, False):
            started = time.perf_counter()
            ds = datasets.load_dataset(
                "hf_lvf",
                data_dir=str(root),
                split="train",
                streaming=streaming,
                cache_dir=cache_dir,
                **params,
            )
            if not streaming:
                ds = ds.with_format("numpy")
            load_s = time.perf_counter() - started
            core = VideoWindows(root, **params).iter_samples()
            same, count, read_s = True, 0, 0.0
            started = time.perf_counter()
            for row in ds if streaming else (ds[i] for i in range(len(ds))):
                read_s += time.perf_counter() - started
                want = next(core)
                same &= bool(np.array_equal(row["video"], want["video"]))
                same &= int(row["sample_idx"]) == want["sample_idx"]
                count += 1
                started = time.perf_counter()
            same &= next(core, None) is None
            mode = "streaming" if streaming else "map-style, numpy"
            rows.append(
                (
                    f"load_dataset ({mode}) windows/s",
                    f"{count / read_s:.1f} (load {load_s:.2f} s; windows equal the core's: "
                    f"{'yes' if same else 'NO'})",
                )
            )
    return rows


def _convert(args: argparse.Namespace) -> int:
    import warnings

    from .convert import convert_videos
    from .errors import SkippedVideoWarning

    with warnings.catch_warnings():
        # The summary lists the skipped files; no need to print each warning too.
        warnings.simplefilter("ignore", SkippedVideoWarning)
        try:
            summary = convert_videos(
                args.inputs,
                args.root,
                quality=args.quality,
                resize=args.resize,
                crop=args.crop,
                fps=args.fps,
                workers=args.workers,
                on_error=args.on_error,
                mode="append" if args.append else "overwrite" if args.overwrite else "create",
                progress=not args.no_progress,
                storage_options=args.storage_options,
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
    width_col = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width_col}}  {value}")
    for item in summary.skipped:
        print(f"  skipped {item.path}: {item.reason}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from .layout import read_layout
    from .merge import merge_roots

    started = time.perf_counter()
    options = args.storage_options
    dest = merge_roots(args.roots, args.dest, overwrite=args.overwrite, storage_options=options)
    layout = read_layout(str(dest), storage_options=options)
    rows = [
        ("root", str(dest)),
        ("videos", str(len(layout.videos))),
        ("frames", str(layout.num_rows)),
        ("time", f"{time.perf_counter() - started:.2f} s"),
    ]
    width_col = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width_col}}  {value}")
    return 0


def _resize(text: str) -> int | tuple[int, int]:
    """``N`` (shorter side) or ``HxW`` (exact)."""
    try:
        return int(text)
    except ValueError:
        return _frame_size(text)


def _frame_size(text: str) -> tuple[int, int]:
    try:
        height, width = (int(x) for x in text.lower().split("x"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected HxW such as 64x64, got {text!r}") from err
    return height, width


def _card_options(args: argparse.Namespace) -> dict:
    return {
        "license": args.license,
        "pretty_name": args.pretty_name,
        "window_length": args.window_length,
        "frame_skip": args.frame_skip,
        "hop_size": args.hop_size,
    }


def _push(args: argparse.Namespace) -> int:
    from .publish import push_to_hub

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
    from .card import write_card

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


def _add_card_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("dataset card")
    group.add_argument("--license", help="Hub license id, e.g. cc-by-4.0 (default: kept/unknown)")
    group.add_argument("--pretty-name", help="the card's title")
    group.add_argument(
        "--window-length",
        type=int,
        help="frames per sample in the load code (default: up to 16, as the videos allow)",
    )
    group.add_argument("--frame-skip", type=int, help="frames skipped inside a sample (0)")
    group.add_argument("--hop-size", type=int, help="frames between sample starts (window length)")


def _add_storage_options(*parsers: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable) on each parser, into ``args.storage_options``
    (a dict, or None): lance's options for roots on object stores. Without them, the
    environment is read as lance reads it (AWS_ENDPOINT, AWS_ACCESS_KEY_ID, ...)."""

    def pair(text: str) -> tuple[str, str]:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            # The value is not shown: it may be a credential.
            raise argparse.ArgumentTypeError("expected KEY=VALUE, e.g. aws_region=us-east-1")
        return key.strip(), value

    class Collect(argparse.Action):
        def __call__(self, parser, namespace, value, option_string=None):  # noqa: ANN001
            namespace.storage_options = {**(namespace.storage_options or {}), value[0]: value[1]}

    for parser in parsers:
        parser.add_argument(
            "--storage-option",
            dest="storage_options",
            metavar="KEY=VALUE",
            type=pair,
            action=Collect,
            default=None,
            help="an option for roots on object stores (s3://, gs://, az://), with lance's "
            "names, e.g. aws_endpoint=http://localhost:9000 (repeatable; default: the AWS_*... "
            "environment variables, as lance reads them)",
        )


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

    convert = sub.add_parser(
        "convert",
        help="convert video files (or a videofolder-style folder) to a new root, or append them",
        description="Convert video files to a new lance-video-frames root (or, with --append, "
        "add them to an existing one). INPUT is a file, a glob pattern or a folder (class "
        "sub-folders become a label; metadata.csv/jsonl with a file_name column adds per-video "
        "fields).",
    )
    convert.add_argument("inputs", nargs="+", metavar="INPUT", help="files, globs or folders")
    convert.add_argument("root", metavar="ROOT", help="the root folder to create (or append to)")
    convert.add_argument("--quality", type=int, default=65, help="WebP quality 0-100 (65)")
    convert.add_argument(
        "--resize", type=_resize, default=None, help="N: shorter side to N; HxW: exact size"
    )
    convert.add_argument(
        "--crop",
        choices=("none", "center"),
        default="none",
        help="center: scale to cover --resize keeping the aspect ratio, keep the middle "
        "(one size for all videos); none: as --resize says (default)",
    )
    convert.add_argument("--fps", type=float, default=None, help="resample to this frame rate")
    convert.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: 1 per core; 0: none)"
    )
    convert.add_argument(
        "--on-error", choices=("skip", "raise"), default="skip", help="for unreadable files"
    )
    existing = convert.add_mutually_exclusive_group()
    existing.add_argument("--overwrite", action="store_true", help="replace an existing ROOT")
    existing.add_argument(
        "--append",
        action="store_true",
        help="add the videos to an existing ROOT (files already in it are skipped)",
    )
    convert.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    convert.set_defaults(func=_convert)

    merge = sub.add_parser(
        "merge",
        help="merge roots into a new one (frames copied, not re-encoded)",
        description="Build the root DEST from the videos of every ROOT, in order, copying each "
        "frame's WebP bytes as they are. Video ids are shifted past those of the roots before.",
    )
    merge.add_argument("roots", nargs="+", metavar="ROOT", help="the roots to merge, in order")
    merge.add_argument("dest", metavar="DEST", help="the root folder to create")
    merge.add_argument("--overwrite", action="store_true", help="replace an existing DEST")
    merge.set_defaults(func=_merge)

    push = sub.add_parser(
        "push",
        help="publish a root and its dataset card to a Hub dataset repo, in one commit",
        description="Publish ROOT to the dataset repo REPO_ID (created if needed) with a "
        "generated dataset card and preview picture, in one commit.",
    )
    push.add_argument("root", metavar="ROOT", help="the local root folder")
    push.add_argument("repo_id", metavar="REPO_ID", help="namespace/name of the dataset repo")
    push.add_argument("--path-in-repo", help="folder of the repo to put the root in (default: top)")
    push.add_argument("--revision", help="branch to commit to (default: main)")
    push.add_argument("--private", action="store_true", help="create the repo private")
    push.add_argument("--token", help="Hub token with write access (default: HF_TOKEN / login)")
    push.add_argument("--commit-message", help="the commit's title")
    _add_card_arguments(push)
    push.set_defaults(func=_push)

    card = sub.add_parser(
        "card",
        help="write the dataset card (README.md) of a root and its preview picture",
        description="Write the dataset card of ROOT and its preview picture beside it. The "
        "user-written sections of an existing card at the output path are kept.",
    )
    card.add_argument("root", metavar="ROOT", help="the root (a folder or hf://datasets/...)")
    card.add_argument("-o", "--output", default="README.md", help="the card's path (README.md)")
    card.add_argument("--repo-id", help="the dataset repo the load code names")
    card.add_argument("--path-in-repo", help="the root's folder in that repo (default: top)")
    card.add_argument("--no-preview", action="store_true", help="no preview picture")
    _add_card_arguments(card)
    card.set_defaults(func=_card)
    _add_storage_options(convert, merge, push, card)
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
    except (LVFError, ValueError, FileExistsError, FileNotFoundError, BlockingIOError) as err:
        print(f"hf-lvf: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
