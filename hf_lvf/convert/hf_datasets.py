"""``datasets`` video datasets as sources: a ``Dataset`` / ``IterableDataset`` with a ``Video``
column (read with ``decode=False``: a row's bytes are written once to a file of the
conversion's scratch folder, a row's local file is converted where it is), and Hub
``videofolder`` repos (``hf://datasets/org/repo``, pinned to a commit).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputNotFoundError, ParameterError
from ..hf.video_rows import video_rows
from ..location import VIDEO_EXTENSIONS, is_hub_uri
from ..write.writer import check_metadata
from .repo_files import RepoFiles
from .sources import METADATA_FILENAMES, _collect_sources, _Source


@dataclass(frozen=True)
class DatasetImport:
    sources: list[_Source]
    label_names: list[str] | None
    lineage: dict[str, Any]


def dataset_sources(dataset: Any, scratch: Path) -> DatasetImport:
    """The rows of ``dataset`` as sources; row bytes go to files under ``scratch`` (a
    folder the caller removes when the conversion ends, however it ends).

    Raises:
        ValueError: no single ``Video`` column, a row without a video, or a reserved column.
    """
    found = video_rows(dataset)
    scratch.mkdir(parents=True, exist_ok=True)
    sources = []
    width = 9
    for i, (data, path, fields) in enumerate(found.rows):
        if found.label_column is not None and found.label_column != "label":
            fields["label"] = fields.pop(found.label_column)
        if "fps" in fields:
            raise ParameterError(
                "column 'fps' is reserved: the converter records the frame rate there"
            )
        name = PurePosixPath(path).name if path else f"{i:0{width}d}.mp4"
        if data is not None:
            file = scratch / f"{i:0{width}d}{PurePosixPath(name).suffix or '.mp4'}"
            file.write_bytes(data)
            checksum = hashlib.sha256(data).hexdigest()
        elif path is not None and Path(path).is_file():
            file, checksum = Path(path), None
        elif path is not None and is_hub_uri(path):  # a streamed Hub videofolder's row
            file, checksum = path, None  # the worker fetches it
        else:
            raise ParameterError(
                f"row {i} of the dataset has no video bytes and no readable path {path!r}"
            )
        key = f"{i:0{width}d}/{PurePosixPath(name).stem}"
        sources.append(
            _Source(
                file=str(file),
                path=f"{i:0{width}d}/{name}",
                key=key,
                metadata=check_metadata(key, fields),
                checksum=checksum,
            )
        )
    if not sources:
        raise ParameterError("the dataset to convert has no rows")
    info = getattr(dataset, "info", None)
    lineage: dict[str, Any] = {"source_format": "datasets"}
    name = getattr(info, "dataset_name", None) or getattr(info, "builder_name", None)
    if name:
        lineage["source"] = name
    fingerprint = getattr(dataset, "_fingerprint", None)
    if fingerprint:
        lineage["source_revision"] = fingerprint
    return DatasetImport(sources, found.label_names, lineage)


def has_videos(files: RepoFiles, extensions: Sequence[str] = VIDEO_EXTENSIONS) -> bool:
    """Whether a Hub repo holds video files (a videofolder) rather than, say, parquet."""
    suffixes = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    return any(n.lower().endswith(suffixes) for n in files.names)


def hub_folder_sources(
    files: RepoFiles,
    *,
    extensions: Sequence[str] = VIDEO_EXTENSIONS,
    known_labels: Sequence[str] | None = None,
) -> tuple[list[_Source], list[str] | None]:
    """A Hub ``videofolder`` repo at its pinned commit: its video and metadata files are
    fetched into the Hugging Face cache (one snapshot folder per commit), then read as a
    local folder; the recorded paths are the repo's.

    Raises:
        FileNotFoundError: the repo holds no video file.
    """
    suffixes = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    listing = files.names
    wanted = [
        n
        for n in listing
        if (n.lower().endswith(suffixes) or PurePosixPath(n).name in METADATA_FILENAMES)
        and not any(part.startswith(".") for part in PurePosixPath(n).parts)
    ]
    if not any(n.lower().endswith(suffixes) for n in wanted):
        raise InputNotFoundError(f"no video files ({', '.join(suffixes)}) in {files.folder!r}")
    local = [files.local(n) for n in sorted(wanted)]
    first, rel = local[0], sorted(wanted)[0]
    folder = Path(os.fspath(first))
    for _ in PurePosixPath(rel).parts:
        folder = folder.parent
    return _collect_sources([folder], extensions=extensions, known_labels=known_labels)
