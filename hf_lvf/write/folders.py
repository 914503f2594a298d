"""A folder of roots written as one: ``out/train``, ``out/validation`` (one root per split) or
``out/<camera>``, created or replaced whole.

Written one root after another straight into ``out``, an overwrite would leave what was there
beside the new roots (an old root's ``_metadata.json``, which ``load_dataset(data_dir=out)``
would go on reading; a split the new videos lack), and a failure part-way would leave some
roots new and some old, or half of a new dataset. So, locally, the roots are built in a scratch
folder beside ``out`` and moved into place once all are complete:

- ``out`` absent, or ``mode="overwrite"``: the scratch folder becomes ``out``, replacing
  whatever was there (a root or a folder of roots), by :func:`~.writer.atomic_root`: the old
  one is renamed aside, the new one renamed in, the old one removed. An error or a kill before
  that leaves the old ``out`` as it was, readable; the next write cleans up.
- ``mode="create"`` into an existing folder that is not a root: the new roots are renamed into
  it once all are complete. A root at ``out``, or a name already taken, is refused before any
  work.
- ``mode="append"``: each root is appended to in place (:mod:`.append`).

An object store cannot rename. There each root is published on its own
(:mod:`.store_roots`), one after the other, and what cannot be replaced safely is refused
before any work: a root at ``out`` (its ``_metadata.json`` would stay and go on naming the old
videos), roots below ``out`` that the new ones do not replace (they would be read beside them),
and, for one new root at ``out``, roots below it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from ..errors import ParameterError, RootExistsError
from ..layout import METADATA_FILENAME
from ..location.store import is_object_store_uri, list_store_folders, store_file_exists
from .append import WriteMode
from .writer import _scratch_name, atomic_root, recover, write_locks


@contextlib.contextmanager
def folder_of_roots(
    root: str | os.PathLike[str],
    names: Sequence[str],
    mode: WriteMode,
    storage_options: Mapping[str, str] | None = None,
) -> Iterator[tuple[Path | str, WriteMode]]:
    """``(folder, mode)``: write each of the roots ``names`` that make ``root`` at
    ``folder/<name>`` with that ``mode``; on leaving, they are ``root/<name>`` (see the module
    docstring).

    Raises:
        FileExistsError: ``mode="create"`` and ``root`` is a root or holds one of ``names``;
            on an object store, ``root`` is a root, or (overwrite) holds other roots than
            ``names``. All before any work.
        BlockingIOError: another process is writing ``root`` or a root in it.
    """
    if is_object_store_uri(str(root)):
        check_store_folder(str(root), names, mode, storage_options)
        yield str(root), mode
        return
    if mode == "append":
        yield Path(root), mode
        return
    path = Path(root).absolute()
    if mode == "create" and path.exists():
        with _filling(path, names) as scratch:
            yield scratch, "create"
        return
    with atomic_root(path, overwrite=mode == "overwrite") as scratch:
        yield scratch, "create"


def check_outside(
    root: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]], mode: WriteMode
) -> None:
    """Refuse an overwrite of a local ``root`` that holds one of the input ``files`` (absolute
    paths; an input folder may be ``root`` itself): what was at ``root`` is deleted once the
    new roots are in place, and the inputs with it.

    Raises:
        ValueError: one of ``files`` is inside ``root``.
    """
    if mode != "overwrite" or is_object_store_uri(str(root)):
        return
    inside = os.path.join(os.path.abspath(root), "")
    for file in files:
        text = os.fspath(file)
        if os.path.isabs(text) and os.path.join(os.path.abspath(text), "").startswith(inside):
            raise ParameterError(
                f"the input {text!r} is inside {str(root)!r}, which overwrite=True "
                "(mode='overwrite') replaces, deleting what it holds: write the output elsewhere"
            )


def _listed(folder: str | Path, names: Sequence[str]) -> str:
    return ", ".join(repr(f"{folder}/{n}") for n in names)


def _refuse_taken(folder: Path, names: Sequence[str]) -> None:
    if (folder / METADATA_FILENAME).exists():
        raise RootExistsError(
            f"{str(folder)!r} is a root (it has a {METADATA_FILENAME}); the new videos make one "
            f"root each in it ({_listed(folder, names)}), which would not replace it: pass "
            "overwrite=True (mode='overwrite') to replace it, or choose another folder"
        )
    if not folder.is_dir():
        raise RootExistsError(f"{str(folder)!r} exists and is not a folder")
    taken = [n for n in names if (folder / n).exists()]
    if taken:
        raise RootExistsError(
            f"{_listed(folder, taken)} already exist{'s' if len(taken) == 1 else ''}; pass "
            f"overwrite=True (mode='overwrite') to replace {str(folder)!r} by the new roots, or "
            "mode='append' to add the videos to them"
        )


@contextlib.contextmanager
def _filling(folder: Path, names: Sequence[str]) -> Iterator[Path]:
    """A scratch folder beside the existing ``folder``; once the roots ``names`` are complete
    in it, each is renamed into ``folder`` (all of them or, on an error, none)."""
    _refuse_taken(folder, names)
    with write_locks(folder):
        recover(folder)
        scratch = _scratch_name(folder, "tmp")  # the next write of folder removes it if killed
        scratch.mkdir()
        moved: list[Path] = []
        try:
            yield scratch
            _refuse_taken(folder, names)  # one may have appeared meanwhile
            for name in names:
                (scratch / name).rename(folder / name)
                moved.append(folder / name)
        except BaseException:
            for path in moved:
                shutil.rmtree(path, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def check_store_folder(
    uri: str,
    names: Sequence[str] | None,
    mode: WriteMode,
    storage_options: Mapping[str, str] | None,
) -> None:
    """Refuse, before any work, to write the roots ``uri/<name>`` (``names``; ``None``: one
    root at ``uri``) where an object store could not replace what is there (see the module
    docstring).

    Raises:
        FileExistsError: what is at ``uri`` cannot be replaced by them.
    """
    if mode == "append":
        return
    uri = uri.rstrip("/")
    is_root = store_file_exists(f"{uri}/{METADATA_FILENAME}", storage_options)
    if names is not None and is_root:
        raise RootExistsError(
            f"{uri!r} is a root (it has a {METADATA_FILENAME}); the new videos make one root "
            f"each below it ({_listed(uri, names)}), and an object store cannot replace a root "
            f"by them (nothing renames there): its {METADATA_FILENAME} would stay and go on "
            f"naming its old videos. Delete {uri!r} first (every object below '{uri}/'), or "
            "write to another key"
        )
    if is_root:
        return  # one root replaced by one root: see hf_lvf.write.store_roots
    below = [
        n
        for n in list_store_folders(uri, storage_options)
        if store_file_exists(f"{uri}/{n}/{METADATA_FILENAME}", storage_options)
    ]
    if names is None:
        clash, why = below, "a root written at it would leave {them} below it"
    elif mode == "create":
        clash, why = [n for n in below if n in names], "mode='create' does not replace {them}"
    else:
        clash = [n for n in below if n not in names]
        why = "the new videos do not replace {them}, so {they} would be read beside the new roots"
    if clash:
        many = len(clash) > 1
        them, they = ("them", "they") if many else ("it", "it")
        raise RootExistsError(
            f"{uri!r} holds the root{'s' if many else ''} {_listed(uri, clash)}: "
            f"{why.format(them=them, they=they)}, and an object store cannot replace a folder of "
            f"roots whole. Delete {them} first, or write to another key"
        )


__all__ = ["check_outside", "check_store_folder", "folder_of_roots"]
