"""Where a conversion writes: a new root (built aside, renamed into place) or an existing
one it appends to (fragments written into it, one commit; see :mod:`hf_lvf.append`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

from ..append import AppendTarget, WriteMode, appending
from ..layout import METADATA_FILENAME, read_layout
from ..writer import atomic_root, check_same_setting
from .decoding import _FrameOptions, _sha256
from .pool import _CANCEL_MARKER, _PROGRESS_PREFIX
from .sources import _Source


@contextlib.contextmanager
def _destination(
    root: str | os.PathLike[str], mode: WriteMode
) -> Iterator[tuple[Path, AppendTarget | None]]:
    """``(folder the workers write into, the append target or None)``."""
    if mode == "append":
        with appending(root) as target:
            # The workers write into the root itself, so the marker that cancels them and
            # their progress files must not outlive this run, nor a killed earlier one (a
            # scratch folder would have taken them along).
            _remove_run_files(target.root)
            try:
                yield target.root, target
            finally:
                _remove_run_files(target.root)
    else:
        with atomic_root(root, overwrite=mode == "overwrite") as scratch:
            yield scratch, None


def _remove_run_files(root: Path) -> None:
    (root / _CANCEL_MARKER).unlink(missing_ok=True)
    for progress in root.glob(f"{_PROGRESS_PREFIX}*"):
        progress.unlink(missing_ok=True)


def _known_labels(root: str | os.PathLike[str], mode: WriteMode) -> list[str] | None:
    """The class names of the root an append adds to (its new folder labels index them)."""
    if mode != "append" or not (Path(root) / METADATA_FILENAME).is_file():
        return None
    names = read_layout(str(Path(root).absolute())).header.get("label_names")
    return list(names) if isinstance(names, list) else None


def _recorded_resize(options: _FrameOptions) -> int | list[int] | None:
    """``resize`` as ``_metadata.json`` records it."""
    return list(options.resize) if isinstance(options.resize, tuple) else options.resize


def _plan_append(
    sources: list[_Source],
    target: AppendTarget,
    options: _FrameOptions,
    label_names: list[str] | None,
) -> tuple[list[_Source], list[tuple[str, str]]]:
    """The sources to convert into ``target``, and ``(path, reason)`` of those skipped as
    already in the root (by SHA-256 of the file, also among the new ones).

    Raises:
        ValueError: the conversion settings or labels differ from the root's, or a new
            video's key is taken by a different video of the root.
    """
    raw = target.layout.header
    check_same_setting(raw, "quality", options.quality)
    check_same_setting(raw, "resize", _recorded_resize(options))
    check_same_setting(raw, "crop", options.crop)
    lineage = raw.get("lineage")
    if isinstance(lineage, dict) and "fps" in lineage:
        fps = None if options.fps is None else float(options.fps)
        check_same_setting(lineage, "fps", fps)
    if raw.get("label_names") != label_names and ("label_names" in raw or label_names):
        raise ValueError(
            f"the new videos' class folders give label_names {label_names!r} but the root has "
            f"{raw.get('label_names')!r}: appended videos must use the same classes"
        )
    checksums = dict(target.checksums)
    kept, duplicates = [], []
    for source in sources:
        checksum = _sha256(source.file)
        if checksum in checksums:
            duplicates.append(
                (
                    source.path,
                    f"the same file (SHA-256) is already in the root as {checksums[checksum]!r}",
                )
            )
            continue
        if source.key in target.keys:
            raise ValueError(
                f"the root already holds a different video with key {source.key!r} (new file "
                f"{source.file!r}); keys must be unique: rename the file"
            )
        checksums[checksum] = source.path
        kept.append(dataclasses.replace(source, checksum=checksum))  # workers need not hash again
    return kept, duplicates
