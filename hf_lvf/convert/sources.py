"""What to convert: video files, globs and folders, with labels from class sub-folders and
fields from ``metadata.csv`` / ``metadata.jsonl`` (the ``videofolder`` convention of ``datasets``).
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..errors import InputNotFoundError, ParameterError, ParameterTypeError
from ..location import VIDEO_EXTENSIONS
from ..write.writer import (
    check_metadata,
)
from .source_parts import Clip

if TYPE_CHECKING:
    pass


# VIDEO_EXTENSIONS (from hf_lvf.location, where the "this folder holds videos" hints use
# them too): the file name endings a folder walk picks up (case-insensitive). Files and glob
# matches given explicitly are converted whatever their ending.

METADATA_FILENAMES = ("metadata.csv", "metadata.jsonl")


@dataclass(frozen=True)
class _Source:
    file: str  # absolute path to open
    path: str  # as recorded: relative to its input folder, or as given
    key: str
    metadata: dict[str, Any] = field(default_factory=dict)
    checksum: str | None = None  # SHA-256, when already computed (append checks it first)
    clip: Clip | None = None  # part of the file / frames at times / per-frame values
    spans: tuple[Mapping[str, Any], ...] = ()  # {"start", "end" (seconds), **fields}


@dataclass
class _Found:
    file: Path
    path: str
    label_dir: str | None = None  # parent folder name (folder inputs), for labels
    depth: int = 0  # path components below the input folder
    fields: dict[str, Any] | None = None  # its metadata-file row, if it has one


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _collect_sources(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    extensions: Sequence[str] = VIDEO_EXTENSIONS,
    known_labels: Sequence[str] | None = None,
) -> tuple[list[_Source], list[str] | None]:
    """Resolve ``inputs`` to the videos to convert, sorted by recorded path.

    ``known_labels`` are the class names of the root appended to: folder labels index
    into them (a folder of one class is enough), and a class not among them is an error.

    Returns:
        The sources, and the sorted label names if folder labels were inferred.

    Raises:
        FileNotFoundError: an input does not exist, a glob matches no file or a
            folder holds no video file.
        ValueError: two inputs record the same path or key, or a metadata file
            is malformed or names a file that is not one of the folder's videos.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs:
        raise ParameterError("inputs is empty: pass video files, globs or folders")
    suffixes = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    found: list[_Found] = []
    for item in inputs:
        if not isinstance(item, (str, os.PathLike)):
            raise ParameterTypeError(f"inputs must be paths or glob patterns, got {item!r}")
        text = os.fspath(item)
        path = Path(text)
        if path.is_dir():
            found.extend(_walk_folder(path, suffixes))
        elif path.is_file():
            found.append(_Found(file=path.absolute(), path=path.as_posix()))
        elif _is_glob(text):
            matches = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
            if not matches:
                raise InputNotFoundError(f"no file matches the input pattern {text!r}")
            found.extend(_Found(file=Path(m).absolute(), path=Path(m).as_posix()) for m in matches)
        else:
            raise InputNotFoundError(f"input {text!r} is not a file, a folder or a glob pattern")
    label_names = _infer_labels(found, known_labels)
    return _to_sources(found, label_names), label_names


def _walk_folder(folder: Path, suffixes: tuple[str, ...]) -> list[_Found]:
    videos: dict[str, _Found] = {}
    metadata_files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        rel_dir = Path(dirpath).relative_to(folder)
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in sorted(filenames):
            if _hidden(name):
                continue
            file = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if name in METADATA_FILENAMES:
                metadata_files.append(file)
            elif file.suffix.lower() in suffixes:
                parts = PurePosixPath(rel).parts
                videos[rel] = _Found(
                    file=file.absolute(),
                    path=rel,
                    label_dir=parts[-2] if len(parts) > 1 else None,
                    depth=len(parts),
                )
    if not videos:
        raise InputNotFoundError(
            f"no video files ({', '.join(suffixes)}) in folder {str(folder)!r}"
        )
    for metadata_file in metadata_files:
        _attach_metadata(folder, metadata_file, videos)
    return list(videos.values())


def _read_metadata_rows(metadata_file: Path) -> list[dict[str, Any]]:
    if metadata_file.name.endswith(".csv"):
        import pyarrow.csv

        try:
            return pyarrow.csv.read_csv(metadata_file).to_pylist()
        except (OSError, ValueError) as err:  # ArrowInvalid is a ValueError
            raise ParameterError(
                f"cannot read metadata file {str(metadata_file)!r}: {err}"
            ) from err
    rows = []
    with open(metadata_file, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as err:
                raise ParameterError(
                    f"line {line_no} of metadata file {str(metadata_file)!r} is not JSON: {err}"
                ) from err
            if not isinstance(row, dict):
                raise ParameterError(
                    f"line {line_no} of metadata file {str(metadata_file)!r} must be a JSON "
                    f"object, got {row!r}"
                )
            rows.append(row)
    return rows


def _attach_metadata(folder: Path, metadata_file: Path, videos: dict[str, _Found]) -> None:
    """Give the videos a metadata file names (``file_name`` relative to the file's folder)
    its other columns as per-video fields."""
    where = str(metadata_file)
    base = metadata_file.parent.relative_to(folder)
    for row_no, row in enumerate(_read_metadata_rows(metadata_file)):
        if "file_name" not in row:
            raise ParameterError(
                f"metadata file {where!r} row {row_no} has no 'file_name' column (columns: "
                f"{', '.join(map(str, row))})"
            )
        name = row.pop("file_name")
        if not isinstance(name, str) or not name or "://" in name:
            raise ParameterError(
                f"metadata file {where!r} row {row_no}: file_name must be a relative path, "
                f"got {name!r}"
            )
        rel = PurePosixPath(os.path.normpath((base / name).as_posix())).as_posix()
        if PurePosixPath(name).is_absolute() or rel.startswith("../") or rel == "..":
            raise ParameterError(
                f"metadata file {where!r} row {row_no}: file_name {name!r} points outside "
                f"folder {str(folder)!r}"
            )
        video = videos.get(rel)
        if video is None:
            raise ParameterError(
                f"metadata file {where!r} row {row_no} names {name!r}, which is not a video "
                f"file of folder {str(folder)!r}"
            )
        if video.fields is not None:
            raise ParameterError(f"metadata for {rel!r} appears twice (last in {where!r})")
        video.fields = row


def _infer_labels(found: list[_Found], known: Sequence[str] | None = None) -> list[str] | None:
    """Class names from folder names, as ``datasets``' videofolder infers them: only when
    every video of the folder inputs sits at the same depth, with more than one name (or
    with ``known`` names, the root's, at least one)."""
    from_folders = [f for f in found if f.depth > 0]
    names = {f.label_dir for f in from_folders}
    depths = {f.depth for f in from_folders}
    if len(depths) != 1 or None in names or len(names) < (1 if known else 2):
        return None
    if known:
        unknown = sorted(names - set(known))
        if unknown:
            raise ParameterError(
                f"class folder(s) {', '.join(map(repr, unknown))} are not classes of the root "
                f"appended to (its label_names: {list(known)!r})"
            )
        return list(known)
    return sorted(names)


def _to_sources(found: list[_Found], label_names: list[str] | None) -> list[_Source]:
    label_of = {name: i for i, name in enumerate(label_names or [])}
    columns: dict[str, None] = {}
    for f in found:
        columns.update(dict.fromkeys(f.fields or {}))
    if "fps" in columns:
        raise ParameterError(
            "metadata field 'fps' is reserved: the converter records the frame rate of the "
            "stored frames there; rename that metadata column"
        )
    found = sorted(found, key=lambda f: f.path)
    stems = [str(PurePosixPath(f.path).with_suffix("")) for f in found]
    stem_counts = Counter(stems)
    sources: dict[str, _Source] = {}
    for f, stem in zip(found, stems, strict=True):
        if f.path in sources:
            raise ParameterError(
                f"two inputs give the same video path {f.path!r} ({sources[f.path].file!r} and "
                f"{str(f.file)!r}); pass each video once"
            )
        # The key is the path without its extension, unless that would not be unique.
        key = stem if stem_counts[stem] == 1 and stem else f.path
        fields: dict[str, Any] = {}
        if label_names is not None and f.depth > 0:
            fields["label"] = label_of[f.label_dir]
        # Every video gets every metadata column (None where it has no row), so each
        # field has one type across the root; a row's "label" overrides the folder's.
        for name in columns:
            if f.fields is not None and name in f.fields:
                fields[name] = f.fields[name]
            else:
                fields.setdefault(name, None)
        sources[f.path] = _Source(
            file=str(f.file), path=f.path, key=key, metadata=check_metadata(key, fields)
        )
    return list(sources.values())
