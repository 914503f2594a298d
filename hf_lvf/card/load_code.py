"""The "Load it" code of a card: how to read the repo's roots with hf_lvf."""

from __future__ import annotations

from collections.abc import Sequence

from .options import CardOptions, CardRoot


def _load_code(
    roots: Sequence[CardRoot], options: CardOptions, frame_size: tuple[int, int] | None
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
    if frame_size is not None:
        kwargs.append(f"frame_size=({frame_size[0]}, {frame_size[1]})")
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
