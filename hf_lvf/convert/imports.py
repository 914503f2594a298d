"""What ``convert_videos`` was given, resolved to sources: video files and folders, a LeRobot
v3 dataset, webdataset shards, a ``datasets`` video dataset or a Hub repo of any of these."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from ..hf.video_rows import hub_dataset, is_video_dataset, saved_dataset
from ..location import is_hub_uri, is_object_store_uri, parse_hub_uri
from .hf_datasets import dataset_sources, has_videos, hub_folder_sources
from .lerobot import is_lerobot, lerobot_cameras, lerobot_sources
from .repo_files import RepoFiles
from .sources import _collect_sources, _Source
from .tables import attach_frame_values, attach_spans
from .webdataset import is_shards, shard_sources, uniform_metadata


@dataclass
class Resolved:
    """The sources of one root, and what the root records of where they came from."""

    sources: list[_Source]
    label_names: list[str] | None = None
    lineage: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why), before decoding
    source_options: dict[str, str] | None = None  # for workers fetching hf:// files
    header: dict[str, Any] = field(default_factory=dict)  # more top-level _metadata.json fields


@contextlib.contextmanager
def import_scratch(root: str | os.PathLike[str]) -> Iterator[Path]:
    """A local folder for what an import copies (a ``datasets`` dataset's video bytes, shards
    from an object store), removed when the conversion ends, however it ends. Beside a local
    root it is named as the root's scratch folders are (``.<root>.tmp-<pid>-import``), so the
    next write of the root removes it if this process is killed."""
    if is_object_store_uri(str(root)):
        with tempfile.TemporaryDirectory(prefix="hf_lvf-import-") as folder:
            yield Path(folder)
        return
    target = Path(root).absolute()
    folder = target.parent / f".{target.name}.tmp-{os.getpid()}-import"  # made when needed
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def lerobot_files(inputs: Any, token: str | None = None) -> RepoFiles | None:
    """The dataset's files if ``inputs`` is one LeRobot v3 dataset (folder or hf:// repo)."""
    inputs = _single(inputs)
    if not isinstance(inputs, (str, os.PathLike)):
        return None
    text = os.fspath(inputs)
    if is_hub_uri(text):
        if text.lower().endswith(".tar") or "{" in text:
            return None
        files = RepoFiles.open(text, token)
    elif Path(text).is_dir():
        files = RepoFiles(str(Path(text).absolute()))
    else:
        return None
    return files if is_lerobot(files) else None


def _single(inputs: Any) -> Any:
    """One input given as a list of one (as the CLI gives it) -> that input."""
    if isinstance(inputs, (list, tuple)) and len(inputs) == 1:
        return inputs[0]
    return inputs


def cameras_of(files: RepoFiles, camera: str | Sequence[str] | None) -> list[str]:
    """The cameras to convert: ``camera`` (one or several) or all of the dataset's."""
    if (
        camera is not None
        and not isinstance(camera, str)
        and not (isinstance(camera, Sequence) and all(isinstance(c, str) for c in camera))
    ):
        raise ParameterTypeError(f"camera must be a camera name or a list of them, got {camera!r}")
    known = lerobot_cameras(files)
    chosen = (
        list(known) if camera is None else [camera] if isinstance(camera, str) else list(camera)
    )
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise ParameterError(
            f"camera={camera!r}: not video features of LeRobot dataset {files.folder!r} "
            f"(its cameras: {list(known)!r})"
        )
    return chosen


def resolve(
    inputs: Any,
    *,
    extensions: Sequence[str],
    known_labels: Sequence[str] | None,
    fps: float | None,
    camera: str | Sequence[str] | None,
    files: RepoFiles | None,
    scratch: Path | None,
    spans: Any = None,
    frame_values: Any = None,
    storage_options: Any = None,
) -> Resolved:
    """The sources of ``inputs``, with the ``spans`` and ``frame_values`` tables attached."""
    resolved = _resolve(
        inputs, extensions, known_labels, fps, camera, files, scratch, storage_options
    )
    if spans is not None:
        resolved.sources = attach_spans(resolved.sources, spans)
    if frame_values is not None:
        resolved.sources = attach_frame_values(resolved.sources, frame_values)
    return resolved


def _resolve(
    inputs: Any,
    extensions: Sequence[str],
    known_labels: Sequence[str] | None,
    fps: float | None,
    camera: str | Sequence[str] | None,
    files: RepoFiles | None,
    scratch: Path | None,
    storage_options: Any = None,
) -> Resolved:
    """The sources of ``inputs`` (for a LeRobot dataset, ``files``, of ``camera``).

    ``scratch``: a local folder removed when the conversion ends, for the bytes of a
    ``datasets`` dataset's rows and copies of shards on an object store
    (``storage_options``: the store's options).
    """
    if files is not None and camera is not None:
        cameras = [camera] if isinstance(camera, str) else list(camera)
        found = lerobot_sources(files, cameras[0], fps=fps, streams=tuple(cameras[1:]))
        return Resolved(
            found.sources, None, found.lineage, [], files.storage_options, {"lerobot": found.meta}
        )
    if is_video_dataset(inputs):
        assert scratch is not None
        rows = dataset_sources(inputs, scratch)
        return Resolved(rows.sources, rows.label_names, rows.lineage)
    single = _single(inputs)
    if isinstance(single, (str, os.PathLike)) and Path(single).is_dir():
        tars = sorted(str(p) for p in Path(single).glob("*.tar"))
        if tars and not any(p.suffix != ".tar" for p in Path(single).iterdir() if p.is_file()):
            inputs = tars  # a folder of shards
    if is_shards(inputs):
        shards = shard_sources(inputs, scratch=scratch, storage_options=storage_options)
        return Resolved(uniform_metadata(shards.sources), None, shards.lineage, shards.skipped)
    if isinstance(single, (str, os.PathLike)) and Path(single).is_dir():
        saved = saved_dataset(os.fspath(single))  # a save_to_disk folder
        if saved is not None:
            assert scratch is not None
            rows = dataset_sources(saved, scratch)
            lineage = rows.lineage | {"source": str(Path(single).absolute())}
            return Resolved(rows.sources, rows.label_names, lineage)
    if isinstance(single, str) and is_hub_uri(single):
        repo = RepoFiles.open(single)
        if not has_videos(repo, extensions):  # a datasets repo of parquet with video bytes
            where = parse_hub_uri(single)
            assert scratch is not None and repo.sha is not None
            found = hub_dataset(where.repo_id, repo.sha, where.path_in_repo or None, repo.token)
            rows = dataset_sources(found, scratch)
            return Resolved(rows.sources, rows.label_names, repo.lineage("datasets"))
        sources, label_names = hub_folder_sources(
            repo, extensions=extensions, known_labels=known_labels
        )
        return Resolved(sources, label_names, repo.lineage("videofolder"))
    sources, label_names = _collect_sources(
        inputs, extensions=extensions, known_labels=known_labels
    )
    return Resolved(sources, label_names)
