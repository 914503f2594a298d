"""The arguments of the ``hf-lvf`` command line: one parser-building function per command,
and the help a user reads (``hf-lvf --help``: one line per command and three examples; each
command's help ends with an example). No command runs here: :mod:`hf_lvf.cli` runs each by
the ``command`` its parser records."""

from __future__ import annotations

import argparse
import textwrap

from ..decode import CODECS, DEFAULT_QUALITY
from ..errors import ParameterError

_DESCRIPTION = """\
Video datasets in the lance-video-frames layout (one WebP frame per row of a Lance
table, plus _metadata.json), read as fixed-length frame windows."""

_EXAMPLES = """\
examples:
  hf-lvf convert videos/ clips --resize 224 --crop center --fps 8
  hf-lvf info clips --window-length 16 --hop-size 4
  hf-lvf show clips 3 -o window.webp --window-length 16

Run `hf-lvf COMMAND --help` for the options of a command and an example.
Documentation (guides, API and command reference): docs/ in the source; `mkdocs serve` shows it."""


def _command(
    sub: argparse._SubParsersAction, name: str, summary: str, description: str, example: str
) -> argparse.ArgumentParser:
    """A sub-command: one line in ``hf-lvf --help``, its help ending with an example."""
    return sub.add_parser(
        name,
        help=summary,
        description="\n".join(textwrap.wrap(description, 88)),
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _add_window_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("windows (the options of VideoWindows)")
    add = group.add_argument
    add("--window-length", type=int, default=1, metavar="N", help="frames per window (1)")
    add("--frame-skip", type=int, default=0, metavar="N", help="frames skipped inside one (0)")
    add("--hop-size", type=int, default=1, metavar="N", help="frames between window starts (1)")
    add("--min-video-frames", type=int, metavar="N", help="videos with fewer yield no window")
    add(
        "--windows-in",
        choices=("videos", "spans"),
        default="videos",
        help="spans: windows inside the videos' spans (captions...), each cut as a video",
    )


def _offsets(kind: type) -> object:
    def parse(text: str) -> tuple[str, list]:
        name, sep, values = text.partition("=")
        try:
            if not sep or not name:
                raise ParameterError(text)
            return name, [kind(v) for v in values.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected FIELD=OFFSET,OFFSET,... ({kind.__name__} offsets), got {text!r}"
            ) from None

    return parse


def _add_field_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("per-frame fields and sampling (see VideoWindows)")
    add = group.add_argument
    add("--frame-fields", nargs="*", metavar="FIELD", help="fields to read (default: all)")
    add(
        "--frame-offsets",
        type=_offsets(int),
        action="append",
        metavar="FIELD=0,1,..",
        help="read FIELD at these frame offsets from the window's last frame (repeatable)",
    )
    add(
        "--delta-timestamps",
        type=_offsets(float),
        action="append",
        metavar="FIELD=-0.1,0,..",
        help="the same, in seconds (LeRobot's delta_timestamps; repeatable)",
    )
    add(
        "--sampling",
        choices=("windows", "every_frame"),
        default="windows",
        help="every_frame: one window ending at each frame, as LeRobot samples (windows)",
    )


def _add_hub_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revision", help="for hf:// roots: branch, tag or commit")
    parser.add_argument("--token", help="for hf:// roots: Hub token (default: HF_TOKEN / login)")


def _add_info_parser(sub: argparse._SubParsersAction) -> None:
    info = _command(
        sub,
        "info",
        "what a root holds: videos, frames, sizes, fields, windows",
        "Describe ROOT from its metadata (no frame is read): videos, frames, frame sizes, "
        "fps and duration, metadata fields with their values, the windows that the window "
        "options give, encoded bytes per frame, size on disk, encoding, the Lance version "
        "read, and any problem a read would meet.",
        "hf-lvf info clips --window-length 16 --hop-size 4 --json",
    )
    info.add_argument("root", metavar="ROOT", help="a root folder, hf://datasets/... or a URL")
    info.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    _add_hub_arguments(info)
    _add_window_arguments(info)


def _add_show_parser(sub: argparse._SubParsersAction) -> None:
    show = _command(
        sub,
        "show",
        "write one window as the model sees it (.webp, .gif or .png)",
        "Read window INDEX of ROOT with the given reading options and write it to FILE: "
        ".webp or .gif, an animation with one frame per window frame at the video's fps; "
        ".png, a contact sheet with the frame numbers. The sample's keys and values are "
        "printed (the video as its shape).",
        "hf-lvf show clips 37 -o window.webp --window-length 16 --frame-size 224x224 --crop center",
    )
    show.add_argument("root", metavar="ROOT", help="a root folder, hf://datasets/... or a URL")
    show.add_argument(
        "index", metavar="INDEX", type=int, help="the window (negative: from the end)"
    )
    show.add_argument("-o", "--output", required=True, metavar="FILE", help=".webp, .gif or .png")
    _add_window_arguments(show)
    reading = show.add_argument_group("reading")
    reading.add_argument("--frame-size", type=_frame_size, metavar="HxW", help="resize frames to")
    reading.add_argument(
        "--crop", choices=("none", "center"), default="none", help="with --frame-size"
    )
    reading.add_argument(
        "--no-decode-scaled",
        dest="decode_scaled",
        action="store_false",
        help="decode JPEG frames at full size before resizing (default: DCT-scaled)",
    )
    show.add_argument("--fps", type=float, help="play at this frame rate (default: the video's)")
    show.add_argument("--lossless", action="store_true", help="lossless WebP")
    _add_field_arguments(show)
    _add_hub_arguments(show)


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


def _add_demo_parser(sub: argparse._SubParsersAction) -> None:
    demo = _command(
        sub,
        "demo",
        "write a small synthetic root and read it back (a quick check)",
        "Write a small synthetic root, read its windows back through VideoWindows and "
        "load_dataset, and print a table of what it took.",
        "hf-lvf demo --videos 8 --frame-size 128x128",
    )
    demo.add_argument("--root", help="where to write it (default: a temporary folder)")
    demo.add_argument("--videos", type=int, default=4)
    demo.add_argument("--frames", type=int, default=48, help="frames per video")
    demo.add_argument("--frame-size", type=_frame_size, default=(64, 64), help="HxW")
    demo.add_argument("--window-length", type=int, default=16)
    demo.add_argument("--hop-size", type=int, default=4)


def _add_convert_parser(sub: argparse._SubParsersAction) -> None:
    convert = _command(
        sub,
        "convert",
        "convert video files into a new root (or append them to one)",
        "Convert video files to a new lance-video-frames root (or, with --append, "
        "add them to an existing one). INPUT is a file, a glob pattern or a folder (class "
        "sub-folders become a label; metadata.csv/jsonl with a file_name column adds per-video "
        "fields), a LeRobot v3 dataset (folder or hf://datasets/org/repo[@rev]), webdataset "
        "tar shards (shards/{00000..00009}.tar, local or hf://) or a Hub videofolder repo.",
        "hf-lvf convert videos/ clips --resize 224 --crop center --fps 8",
    )
    convert.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="files, globs, folders, datasets or shards"
    )
    convert.add_argument("root", metavar="ROOT", help="the root folder to create (or append to)")
    convert.add_argument(
        "--codec",
        choices=CODECS,
        default="webp",
        help="how frames are stored: webp (default), jpeg (faster reads), png (lossless)",
    )
    convert.add_argument(
        "--quality",
        type=int,
        default=DEFAULT_QUALITY,
        help=f"the encoder's quality 0-100 ({DEFAULT_QUALITY})",
    )
    convert.add_argument("--lossless", action="store_true", help="lossless WebP (--codec webp)")
    convert.add_argument(
        "--no-fidelity",
        dest="fidelity",
        action="store_false",
        help="do not measure the PSNR of the stored frames against the source",
    )
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
    convert.add_argument(
        "--splits",
        choices=("auto", "none"),
        default="auto",
        help="auto: a split column or train/, validation/, test/ folders give ROOT/<split> "
        "roots; none: one root",
    )
    convert.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    convert.add_argument(
        "--camera",
        action="append",
        default=None,
        help="a LeRobot dataset's camera to convert (repeatable; default: all, one root each)",
    )
    convert.add_argument(
        "--spans",
        default=None,
        metavar="TABLE",
        help="captioned spans keyed by file (.csv/.jsonl/.parquet; Panda-70M or InternVid shape)",
    )
    convert.add_argument(
        "--frame-values",
        default=None,
        metavar="TABLE",
        help="per-frame values keyed by file and frame or timestamp (.csv/.jsonl/.parquet)",
    )


def _add_merge_parser(sub: argparse._SubParsersAction) -> None:
    merge = _command(
        sub,
        "merge",
        "merge roots into a new one (frames copied as they are)",
        "Build the root DEST from the videos of every ROOT, in order, copying each "
        "frame's encoded bytes as they are. Video ids are shifted past those of the roots before.",
        "hf-lvf merge week1 week2 all_weeks",
    )
    merge.add_argument("roots", nargs="+", metavar="ROOT", help="the roots to merge, in order")
    merge.add_argument("dest", metavar="DEST", help="the root folder to create")
    merge.add_argument("--overwrite", action="store_true", help="replace an existing DEST")


def _add_proxy_parser(sub: argparse._SubParsersAction) -> None:
    proxy = _command(
        sub,
        "add-proxy",
        "add a smaller copy of every frame to a root (a proxy stream)",
        "Add to ROOT a proxy stream: every frame again, its shorter side SIZE pixels, so "
        "that reads of frames that small decode it instead of the full frame. The frames' "
        "data files are not touched; the new version is published atomically.",
        "hf-lvf add-proxy clips --size 224",
    )
    proxy.add_argument("root", metavar="ROOT", help="the root (local folder or s3://...)")
    proxy.add_argument("--size", type=int, default=224, help="the shorter side (224)")
    proxy.add_argument("--codec", choices=("jpeg", "webp", "png"), default="jpeg")
    proxy.add_argument("--quality", type=int, default=90, help="the encoder's quality (90)")
    proxy.add_argument("--name", help="the stream's name (default: proxy_SIZE)")


def _add_push_parser(sub: argparse._SubParsersAction) -> None:
    push = _command(
        sub,
        "push",
        "publish a root and its dataset card to a Hub dataset repo",
        "Publish ROOT to the dataset repo REPO_ID (created if needed) with a "
        "generated dataset card and preview picture, in one commit.",
        "hf-lvf push clips my-name/my-clips --license cc-by-4.0 --window-length 16",
    )
    push.add_argument("root", metavar="ROOT", help="the local root folder")
    push.add_argument("repo_id", metavar="REPO_ID", help="namespace/name of the dataset repo")
    push.add_argument("--path-in-repo", help="folder of the repo to put the root in (default: top)")
    push.add_argument("--revision", help="branch to commit to (default: main)")
    push.add_argument("--private", action="store_true", help="create the repo private")
    push.add_argument("--token", help="Hub token with write access (default: HF_TOKEN / login)")
    push.add_argument("--commit-message", help="the commit's title")
    _add_card_arguments(push)


def _add_card_parser(sub: argparse._SubParsersAction) -> None:
    card = _command(
        sub,
        "card",
        "write the dataset card (README.md) of a root, with a preview",
        "Write the dataset card of ROOT and its preview picture beside it. The "
        "user-written sections of an existing card at the output path are kept.",
        "hf-lvf card clips -o README.md --repo-id my-name/my-clips",
    )
    card.add_argument("root", metavar="ROOT", help="the root (a folder or hf://datasets/...)")
    card.add_argument("-o", "--output", default="README.md", help="the card's path (README.md)")
    card.add_argument("--repo-id", help="the dataset repo the load code names")
    card.add_argument("--path-in-repo", help="the root's folder in that repo (default: top)")
    card.add_argument("--no-preview", action="store_true", help="no preview picture")
    _add_card_arguments(card)


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
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="hf-lvf",
        description=_DESCRIPTION,
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"hf-lvf {__version__}", help="print the version"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    # In the order of a first hour: look, convert, publish; the demo checks an install.
    for add in (
        _add_info_parser,
        _add_show_parser,
        _add_convert_parser,
        _add_merge_parser,
        _add_proxy_parser,
        _add_card_parser,
        _add_push_parser,
        _add_demo_parser,
    ):
        add(sub)
    # Every command that takes a root takes roots on object stores too.
    _add_storage_options(*(parser for name, parser in sub.choices.items() if name != "demo"))
    return parser


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
