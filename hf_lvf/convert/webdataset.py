"""webdataset / video2dataset tar shards as sources: each sample's video member a video.

A sample is the members of a shard that share a key (the member's name up to the first
``.`` of its base name, webdataset's rule). Its video member (``mp4``, ``webm``, ``mkv``, ...)
is converted straight from its bytes in the tar (no copy); ``txt`` becomes the ``caption``
field; the scalars of ``json`` become per-video metadata; clip spans in the json, in
seconds (video2dataset's ``clips``, Panda-70M's ``timestamp`` with its ``caption`` list),
become spans with their captions.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import tarfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputNotFoundError, ParameterError
from ..location import download_store_file, is_object_store_uri
from .repo_files import RepoFiles
from .source_parts import Clip
from .sources import _Source

logger = logging.getLogger(__name__)

WDS_VIDEO_EXTENSIONS = ("mp4", "webm", "mkv", "mov", "avi", "m4v")
_BRACE = re.compile(r"\{(\d+)\.\.(\d+)\}|\{([^{}]*,[^{}]*)\}")
_RESERVED = {"fps"}  # the converter's own metadata field


def expand_braces(pattern: str) -> list[str]:
    """``shards/{00000..00009}.tar`` -> the ten names (zero padding kept); ``{a,b}`` too."""
    match = _BRACE.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    if match.group(3) is not None:
        choices = match.group(3).split(",")
    else:
        first, last = match.group(1), match.group(2)
        width = len(first) if first.startswith("0") else 0
        step = 1 if int(last) >= int(first) else -1
        choices = [str(i).zfill(width) for i in range(int(first), int(last) + step, step)]
    return [name for c in choices for name in expand_braces(head + c + tail)]


def is_shards(inputs: Any) -> bool:
    """Inputs naming tar shards: ``.tar`` paths, brace patterns of them, or a list of them."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs
    if not isinstance(items, Sequence) or not items:
        return False
    return all(
        isinstance(i, (str, os.PathLike)) and os.fspath(i).lower().endswith(".tar") for i in items
    )


@dataclass(frozen=True)
class ShardImport:
    sources: list[_Source]
    skipped: list[tuple[str, str]]  # (shard/key, reason): samples without a usable video
    lineage: dict[str, Any]


def _shard_files(
    inputs: Any, token: str | None, scratch: Path | None, storage_options: Any
) -> list[tuple[RepoFiles, str, str]]:
    """``(files, path in them, name to record)`` of each shard; a shard on an object store is
    copied into ``scratch`` first (the conversion removes it when it ends)."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    shards: list[tuple[RepoFiles, str, str]] = []
    repos: dict[str, RepoFiles] = {}
    for item in items:
        for name in expand_braces(os.fspath(item)):
            if is_object_store_uri(name):
                if scratch is None:
                    raise ParameterError(
                        f"shard {name!r} on an object store needs a scratch folder"
                    )
                local = scratch / "shards" / str(len(shards)) / PurePosixPath(name).name
                download_store_file(name, local, storage_options)
                shards.append((RepoFiles(str(local.parent)), local.name, name))
            elif name.startswith("hf://"):
                # hf://datasets/org/repo[@rev]/path/to/shard.tar: the repo, then the file in it
                parts = name.split("/")
                repo = "/".join(parts[:5])
                files = repos.get(repo) or repos.setdefault(repo, RepoFiles.open(repo, token))
                rel = "/".join(parts[5:])
                shards.append((files, rel, files.uri(rel)))
            else:
                path = Path(name)
                if not path.is_file():
                    raise InputNotFoundError(f"shard {name!r} does not exist")
                shards.append((RepoFiles(str(path.parent.absolute())), path.name, name))
    return shards


def shard_sources(
    inputs: Any,
    *,
    token: str | None = None,
    scratch: Path | None = None,
    storage_options: Any = None,
) -> ShardImport:
    """The samples of the shards as sources, sorted by shard and key.

    Raises:
        FileNotFoundError: a shard does not exist.
        ValueError: two shards hold the same shard name and key.
    """
    sources: list[_Source] = []
    skipped: list[tuple[str, str]] = []
    names = []
    shard_repos = []
    shards = _shard_files(inputs, token, scratch, storage_options)
    for files in {id(f): f for f, _, _ in shards}.values():  # Hub shards: a few at a time
        files.prefetch([rel for f, rel, _ in shards if f is files])
    for files, rel, recorded in shards:
        shard_repos.append(files)
        local = str(files.local(rel))
        shard = PurePosixPath(rel).name
        names.append(recorded)
        for key, members, problem in _samples(local, shard):
            where = f"{shard}/{key}"
            if problem is not None:
                skipped.append((where, problem))
                continue
            video = next((e for e in WDS_VIDEO_EXTENSIONS if e in members), None)
            if video is None:
                kinds = ", ".join(sorted(members)) or "none"
                skipped.append((where, f"the sample has no video member (members: {kinds})"))
                continue
            try:
                source = _sample_source(local, shard, key, video, members)
            except ValueError as err:
                skipped.append((where, str(err)))
                continue
            sources.append(source)
    lineage = {"source": names if len(names) > 1 else names[0], "source_format": "webdataset"}
    paths = Counter(s.path for s in sources)
    twice = [p for p, n in paths.items() if n > 1]
    if twice:
        raise ParameterError(
            f"two shards of the same name hold the sample {twice[0]!r}: name the shards apart"
        )
    repos = {f.folder: f.sha for f in shard_repos if f.sha}
    if repos:
        lineage["source_revision"] = repos if len(repos) > 1 else next(iter(repos.values()))
    return ShardImport(sorted(sources, key=lambda s: s.path), skipped, lineage)


def _samples(file: str, shard: str) -> Iterable[tuple[str, dict[str, tuple[int, int]], str | None]]:
    """``(key, {extension: (offset, size)}, problem)`` per sample, in tar order; a truncated
    member makes its sample ``problem`` (and ends the shard)."""
    size = os.path.getsize(file)
    current: str | None = None
    members: dict[str, tuple[int, int]] = {}
    try:
        with tarfile.open(file, mode="r:") as tar:
            for info in tar:
                if not info.isfile():
                    continue
                folder, _, base = info.name.rpartition("/")
                stem, dot, ext = base.partition(".")
                key = f"{folder}/{stem}" if folder else stem
                if key != current and current is not None:
                    yield current, members, None
                    members = {}
                current = key
                if info.offset_data + info.size > size:
                    yield key, {}, f"member {info.name!r} of shard {shard!r} is truncated"
                    return
                members[ext.lower() if dot else ""] = (info.offset_data, info.size)
    except tarfile.TarError as err:
        where = current or "?"
        yield where, {}, f"shard {shard!r} is damaged after key {where!r}: {err}"
        return
    if current is not None:
        yield current, members, None


def _read(file: str, member: tuple[int, int]) -> bytes:
    with open(file, "rb") as f:
        f.seek(member[0])
        return f.read(member[1])


def _seconds(value: Any) -> float:
    """Seconds from a number or an ``H:MM:SS.mmm`` string (Panda-70M's timestamps)."""
    if isinstance(value, str):
        total = 0.0
        for part in value.split(":"):
            total = total * 60 + float(part)
        return total
    return float(value)


def json_spans(
    meta: dict[str, Any], where: str, *, strict: bool = True
) -> tuple[dict[str, Any], ...]:
    """Spans (seconds) from a sample's json: Panda-70M's ``timestamp`` + ``caption`` lists or
    video2dataset's ``clips`` (with a ``caption`` list, if any). Not ``strict``: captions of
    another count than the spans are left out (a clip cut by video2dataset keeps the
    original video's caption list beside its one span).

    Raises:
        ValueError: spans that are not ``[start, end]`` pairs, or (``strict``) captions of
            another count.
    """
    pairs = meta.get("timestamp", meta.get("clips"))
    if pairs is None:
        return ()
    captions = meta.get("caption")
    if not isinstance(pairs, list) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs
    ):
        raise ParameterError(f"clip spans of {where} must be a list of [start, end], got {pairs!r}")
    if isinstance(captions, list) and len(captions) != len(pairs) and not strict:
        captions = None
    if isinstance(captions, list) and len(captions) != len(pairs):
        raise ParameterError(
            f"{where} has {len(pairs)} clip spans but {len(captions)} captions: one per span"
        )
    spans = []
    for i, (start, end) in enumerate(pairs):
        span: dict[str, Any] = {"start": _seconds(start), "end": _seconds(end)}
        if isinstance(captions, list):
            span["caption"] = captions[i]
        spans.append(span)
    return tuple(spans)


def _captioned(spans: tuple[dict[str, Any], ...], caption: Any) -> tuple[dict[str, Any], ...]:
    """Every span with a ``caption`` (one field set for a root's spans): its own, else the
    sample's ``txt`` for a single span (the clip's caption), else ``None``."""
    single = len(spans) == 1
    return tuple(
        {**span, "caption": span.get("caption", caption if single else None)} for span in spans
    )


def _sample_source(
    file: str, shard: str, key: str, video: str, members: dict[str, tuple[int, int]]
) -> _Source:
    where = f"sample {key!r} of shard {shard!r}"
    metadata: dict[str, Any] = {}
    spans: tuple[dict[str, Any], ...] = ()
    if "json" in members:
        try:
            meta = json.loads(_read(file, members["json"]))
        except ValueError as err:
            raise ParameterError(f"the json of {where} is not JSON: {err}") from None
        if isinstance(meta, dict):
            spans = json_spans(meta, where, strict=False)
            metadata.update(
                (k, v)
                for k, v in meta.items()
                if k not in _RESERVED and (v is None or isinstance(v, (str, int, float, bool)))
            )
    if "txt" in members:
        metadata["caption"] = _read(file, members["txt"]).decode("utf-8", errors="replace")
    if spans:
        spans = _captioned(spans, metadata.get("caption"))
    member = members[video]
    return _Source(
        file=file,
        path=f"{shard}/{key}.{video}",
        key=f"{PurePosixPath(shard).stem}/{key}",
        metadata=metadata,
        clip=Clip(member=member, label=where),
        spans=spans,
    )


def uniform_metadata(sources: list[_Source]) -> list[_Source]:
    """Every video gets every metadata field (``None`` where a sample lacks it), so each
    field has one type across the root."""
    import dataclasses

    names = dict.fromkeys(itertools.chain.from_iterable(s.metadata for s in sources))
    return [dataclasses.replace(s, metadata={n: s.metadata.get(n) for n in names}) for s in sources]
