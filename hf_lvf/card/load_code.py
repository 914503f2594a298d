"""The "Load it" part of a card: code for hf_lvf, and the YAML that lets plain datasets read frames.

A root's Lance table has one row per frame (``video_id``, ``frame_idx``, ``bytes``: a WebP
image). ``datasets`` reads it with its own ``lance`` module, which would type ``bytes`` as
``Video()`` (it sniffs a RIFF header); the card's ``dataset_info.features`` types it as
``image`` instead, and its ``configs`` give each split the Lance files of its roots, so
``load_dataset("org/repo")`` works without hf_lvf.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .options import CardOptions, CardRoot, rate_text

# The files of a root datasets' lance module needs: it opens the dataset whose manifests
# (``_versions/``) it is given, and a local (downloaded) copy also needs the data files.
# Patterns with a wildcard that match nothing are ignored by datasets.
_FRAME_FILES = ("_versions/*", "data/*", "_deletions/*")

# The Lance columns of a frame row, typed for datasets.
FRAME_FEATURES = (
    {"name": "video_id", "dtype": "int32"},
    {"name": "frame_idx", "dtype": "int32"},
    {"name": "bytes", "dtype": "image"},
)

FRAMES_CONFIG = "default"

_SPLIT_RE = re.compile(r"^\w+(\.\w+)*$")  # split names datasets accepts


def _load_code(
    roots: Sequence[CardRoot],
    options: CardOptions,
    frame_size: tuple[int, int] | None,
    crop: str = "none",
) -> dict[str, str]:
    repo_id = options.repo_id or "<namespace>/<dataset>"
    revision = options.revision or "main"
    p = options.params
    kwargs = [f"window_length={p.window_length}"]
    if p.frame_skip:
        kwargs.append(f"frame_skip={p.frame_skip}")
    kwargs.append(f"hop_size={p.hop_size}")
    if p.min_video_frames is not None:
        kwargs.append(f"min_video_frames={p.min_video_frames}")
    if p.fps is not None:
        kwargs.append(f"fps={rate_text(p.fps)}")
    if frame_size is not None:
        kwargs.append(f"frame_size=({frame_size[0]}, {frame_size[1]})")
    if crop != "none":
        kwargs.append(f'crop="{crop}"')
    first = roots[0]
    sub = f"/{first.path_in_repo}" if first.path_in_repo else ""
    windows_code = "\n".join(
        [
            "from hf_lvf import VideoWindows",
            "",
            "windows = VideoWindows(",
            f'    "hf://datasets/{repo_id}{sub}",',
            f'    revision="{revision}",  # a branch, tag or commit sha; resolved once',
            *(f"    {k}," for k in kwargs),
            ")",
            'sample = windows[0]  # sample["video"]: uint8 array (window_length, H, W, 3)',
        ]
    )
    if len(roots) > 1:
        others = ", ".join(
            f'"hf://datasets/{repo_id}' + (f"/{r.path_in_repo}" if r.path_in_repo else "") + '"'
            for r in roots[1:]
        )
        windows_code += f"\n# the repo's other roots: {others}"
    data_files = _data_files_code(roots, repo_id, revision)
    call = ["from datasets import load_dataset", "", "ds = load_dataset(", '    "hf_lvf",']
    call += [f"    data_files={data_files},", *(f"    {k}," for k in kwargs)]
    streaming = "\n".join([*call, "    streaming=True,", ")"])
    download = "\n".join([*call, ")"])
    note = (
        f"`revision` (and the `@{revision}` in `data_files`) picks what you read: a branch or tag "
        "follows new pushes, a commit sha pins the data; hf_lvf resolves it to a commit once and "
        "reads every byte from that commit."
    )
    return {
        "frames_code": _frames_code(roots, repo_id),
        "frames_splits": ", ".join(
            f"`{s}`" for s in dict.fromkeys(frames_split(r.split) for r in roots)
        ),
        "windows_code": windows_code,
        "streaming_code": streaming,
        "download_code": download,
        "revision_note": note,
    }


def _data_files_code(roots: Sequence[CardRoot], repo_id: str, revision: str) -> str:
    def pattern(root: CardRoot) -> str:
        sub = f"/{root.path_in_repo}" if root.path_in_repo else ""
        return f'"hf://datasets/{repo_id}@{revision}{sub}/**"'

    if len(roots) == 1:
        return pattern(roots[0])
    splits: dict[str, list[str]] = {}
    for root in roots:
        splits.setdefault(root.split, []).append(pattern(root))
    items = [
        f'"{split}": {files[0] if len(files) == 1 else "[" + ", ".join(files) + "]"}'
        for split, files in splits.items()
    ]
    return "{\n        " + ",\n        ".join(items) + ",\n    }"


def frames_metadata(
    roots: Sequence[CardRoot],
    old: Mapping[str, Any],
    features: Sequence[Mapping[str, Any]] = FRAME_FEATURES,
) -> tuple[list[dict[str, Any]], Any]:
    """The card's ``configs`` and ``dataset_info``: each split's roots as frame rows (with
    ``features``: those of a frame row, per-frame columns included).

    Configs and infos the user added under other names than ``default`` are kept.
    """
    paths: dict[str, list[str]] = {}
    for root in roots:
        prefix = f"{root.path_in_repo}/" if root.path_in_repo else ""
        paths.setdefault(frames_split(root.split), []).extend(prefix + p for p in _FRAME_FILES)
    ours = {
        "config_name": FRAMES_CONFIG,
        "data_files": [{"split": split, "path": files} for split, files in paths.items()],
    }
    configs = [ours, *_others(old.get("configs"))]
    info = {"features": [dict(f) for f in features]}
    old_infos = _others(old.get("dataset_info"))
    if old_infos:
        return configs, [{"config_name": FRAMES_CONFIG, **info}, *old_infos]
    return configs, info


def frames_split(name: str) -> str:
    """``name`` as a split name datasets accepts (word characters, dot-separated)."""
    if _SPLIT_RE.match(name):
        return name
    return re.sub(r"\W+", "_", name).strip("_") or "train"


def _others(entries: Any) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in entries
        if isinstance(e, Mapping) and e.get("config_name", FRAMES_CONFIG) != FRAMES_CONFIG
    ]


def _frames_code(roots: Sequence[CardRoot], repo_id: str) -> str:
    split = frames_split(roots[0].split)
    return "\n".join(
        [
            "from datasets import load_dataset",
            "",
            f'frames = load_dataset("{repo_id}", split="{split}")  # or streaming=True',
            'row = frames[0]  # {"video_id": 0, "frame_idx": 0, "bytes": <PIL.Image.Image>}',
        ]
    )
