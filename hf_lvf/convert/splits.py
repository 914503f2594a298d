"""Splits in conversion: one root per split, under the output folder.

The ``clips/train``, ``clips/validation`` layout that ``load_dataset("hf_lvf",
data_dir="clips")`` reads as splits comes from either convention of ``datasets``:

- a ``split`` column in ``metadata.csv`` / ``metadata.jsonl`` (its values are the split
  names, every video needs one);
- a ``videofolder`` tree whose top-level folders are split names (``train/``,
  ``validation/``, ``test/``, and the synonyms ``datasets`` knows: ``val/``, ``dev/``,
  ``valid/``, ``training/``, ``testing/``, ``eval/``, ``evaluation/``), class folders below
  them. Their videos are recorded by their path below the split folder, and class labels
  are shared by all splits (``label_names`` from every split's classes).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Literal, NamedTuple

from ..errors import ParameterError
from ..location import is_object_store_uri, join_uri
from ..write.append import WriteMode
from ..write.folders import check_outside, check_store_folder, folder_of_roots
from .class_names import encode_named_labels
from .imports import Resolved
from .sources import _Source
from .summary import ConversionSummary

Splits = Literal["auto", "none"]
SPLIT_COLUMN = "split"
# What datasets' data-files patterns read as each split (datasets.data_files.SPLIT_KEYWORDS).
_FOLDER_SPLITS = {
    "train": "train",
    "training": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
    "test": "test",
    "testing": "test",
    "eval": "test",
    "evaluation": "test",
}
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # datasets' NamedSplit rule
_ORDER = ("train", "validation", "test")


def check_splits(splits: object) -> None:
    """Raise if ``splits`` is not ``"auto"`` or ``"none"``."""
    if splits not in ("auto", "none"):
        raise ParameterError(f"splits must be 'auto' or 'none', got {splits!r}")


def split_sources(
    resolved: Resolved, known_labels: Sequence[str] | None, splits: Splits
) -> list[_Split] | None:
    """``resolved`` as one per split, in ``train``, ``validation``, ``test``, then name order,
    or ``None`` when the videos are one root (``splits="none"``, or no split is given). A
    ``label`` column of names becomes integer labels and ``label_names`` first (in place).

    Raises:
        ValueError: a ``split`` column misses a video's split, or a split name is one that
            ``datasets`` refuses (letters, digits and ``_``, dots between words).
    """
    sources, label_names = encode_named_labels(resolved.sources, resolved.label_names, known_labels)
    resolved.sources, resolved.label_names = sources, label_names  # names -> ClassLabel
    if splits == "none" or not sources:
        return None
    with_column = [s for s in sources if s.metadata.get(SPLIT_COLUMN) is not None]
    if with_column:
        groups = _by_column(sources, len(with_column))
    else:
        groups = _by_folder(sources)
        if groups is None:
            return None
        if label_names is not None and all(
            len(PurePosixPath(s.path).parts) == 1 for g in groups.values() for s in g
        ):
            # split/clip.mp4: the "classes" were the split folders, so there are no labels
            label_names = None
            groups = {n: [_without(s, "label") for s in g] for n, g in groups.items()}
    for name in groups:
        if not _SPLIT_NAME.match(name):
            first = groups[name][0].path
            raise ParameterError(
                f"split {name!r} (of {first!r}) is not a split name datasets accepts: letters, "
                "digits and '_', with dots between words (e.g. 'train', 'validation', 'test')"
            )
    ordered = [n for n in _ORDER if n in groups] + sorted(set(groups) - set(_ORDER))
    return [  # inputs skipped before decoding are reported once, by the first split
        _Split(n, replace(resolved, sources=groups[n], label_names=label_names, skipped=skipped))
        for n, skipped in zip(ordered, [resolved.skipped] + [[]] * len(ordered), strict=False)
    ]


def _by_column(sources: Sequence[_Source], count: int) -> dict[str, list[_Source]]:
    if count < len(sources):
        missing = next(s.path for s in sources if s.metadata.get(SPLIT_COLUMN) is None)
        raise ParameterError(
            f"the metadata file gives {count} of {len(sources)} videos a {SPLIT_COLUMN!r} but "
            f"not {missing!r}: give every video its split, or pass splits='none' to keep "
            f"{SPLIT_COLUMN!r} as a field of one root"
        )
    groups: dict[str, list[_Source]] = {}
    for s in sources:
        groups.setdefault(str(s.metadata[SPLIT_COLUMN]), []).append(_without(s, SPLIT_COLUMN))
    return groups


def _by_folder(sources: Sequence[_Source]) -> dict[str, list[_Source]] | None:
    firsts = [PurePosixPath(s.path).parts for s in sources]
    if any(len(p) < 2 or p[0].lower() not in _FOLDER_SPLITS for p in firsts):
        return None  # not every video sits in a split folder: one root, as before
    groups: dict[str, list[_Source]] = {}
    for s, parts in zip(sources, firsts, strict=True):
        key = PurePosixPath(*PurePosixPath(s.key).parts[1:]).as_posix()
        moved = replace(s, path=PurePosixPath(*parts[1:]).as_posix(), key=key)
        groups.setdefault(_FOLDER_SPLITS[parts[0].lower()], []).append(moved)
    return groups


def _without(source: _Source, name: str) -> _Source:
    return replace(source, metadata={k: v for k, v in source.metadata.items() if k != name})


class _Split(NamedTuple):
    name: str
    resolved: Resolved


def convert_splits(
    convert: Callable[[Resolved, Path | str, WriteMode], ConversionSummary],
    resolved: Resolved,
    groups: Sequence[_Split] | None,
    root: str | os.PathLike[str],
    mode: WriteMode,
    storage_options: Mapping[str, str] | None,
    started: float,
) -> ConversionSummary:
    """The summary of ``convert(resolved, root, mode)``, or, with ``groups``, of converting
    each split to ``root/<split>`` (``root`` their folder), written as one: an overwrite
    replaces what was at ``root`` (a root, or other splits) once every split is complete, a
    failure leaves it as it was (see :mod:`hf_lvf.write.folders`).

    Raises:
        ValueError: an overwrite of a ``root`` that holds an input (before any work).
        FileExistsError, BlockingIOError: see :func:`~hf_lvf.write.folders.folder_of_roots`.
    """
    remote = is_object_store_uri(str(root))
    check_outside(root, (s.file for s in resolved.sources), mode)
    if groups is None:
        if remote:  # one root over a folder of roots: refused where nothing renames
            check_store_folder(str(root), None, mode, storage_options)
        return convert(resolved, root, mode)
    parts = {}
    with folder_of_roots(root, [n for n, _ in groups], mode, storage_options) as (folder, how):
        for name, part in groups:
            at = join_uri(str(folder), name) if remote else Path(folder) / name
            parts[name] = convert(part, at, how)
    final = str(root) if remote else Path(root).absolute()
    return ConversionSummary(
        root=final,
        num_videos=sum(p.num_videos for p in parts.values()),
        num_frames=sum(p.num_frames for p in parts.values()),
        skipped=tuple(s for p in parts.values() for s in p.skipped),
        seconds=time.perf_counter() - started,
        splits={  # where each split is now, not where it was written
            n: replace(p, root=join_uri(str(final), n) if remote else Path(final) / n)
            for n, p in parts.items()
        },
    )


__all__ = [
    "SPLIT_COLUMN",
    "Splits",
    "check_splits",
    "convert_splits",
    "split_sources",
]
