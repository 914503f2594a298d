"""``load_dataset("hf_lvf", ...)``: the ``datasets`` builder for lance-video-frames roots.

How the name resolves. ``datasets.load_dataset(path, ...)`` looks ``path`` up in
``datasets.packaged_modules._PACKAGED_DATASETS_MODULES`` *before* it tries a
local folder or the Hub, so ``import hf_lvf`` registers this module there under
``"hf_lvf"`` (with a hash of the code that decides what the cache holds, so an
upgrade never reuses a stale cache). That is the same table ``csv`` and
``parquet`` live in, it works on datasets 4.x and 5.x, and a folder named
``hf_lvf`` in the working directory (this project's own package, say) does not
shadow it, because the table is checked first.

For packaged builders datasets resolves ``data_dir`` by globbing every file
below it, and with neither ``data_dir`` nor ``data_files`` it globs the working
directory. hf_lvf wraps ``datasets.load.dataset_module_factory`` for the name
``"hf_lvf"`` only: a missing ``data_dir``/``data_files`` is a ``ValueError`` at
once, and a local ``data_dir`` is turned into the ``_metadata.json`` of each root
found in it (the root itself is the ``train`` split; otherwise each sub-folder
that is a root, or holds roots, is the split of its name). Without the wrapper
(a future datasets without that function) the builder still works from
datasets' own glob, since it finds roots by their ``_metadata.json``.

Modes. Both read only ``_metadata.json`` in the calling process; Lance is
opened lazily by whichever process reads frames (pylance is not fork-safe).

- ``streaming=True``: window-range shards (:func:`hf_lvf.hf.iterable.shard_ranges`)
  as the list in ``gen_kwargs``; each shard reads through the core view, in
  batches, reusing frames across windows. Features are the core's (``video`` an
  ``Array4D``).
- map-style: the Arrow cache holds one small row per window: the reference
  (:class:`hf_lvf.WindowVideo`, decoded when a row is read) and the scalar
  columns, never pixels.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa

from .._version import __version__
from ..errors import ParameterError
from ..frames.probe import discard_probe_child, start_probe_child
from ..layout import RootLayout, combined_fields, read_layout
from ..layout.labels import combined_label_names
from ..location import (
    expand_data_files,
    find_roots,
    hub_data_dir_files,
    hub_data_files,
    is_hub_uri,
    is_store_data,
    local_copy,
    parse_hub_uri,
    pin_data_files,
    roots_of_files,
    store_data_files,
)
from ..plan import MIXED_SIZES_HINT
from ..processes import check_main_guard, fork_is_unsafe
from ..read.samples import with_class_labels
from ..read.windows import VideoWindows
from .config import HfLvfConfig
from .feature import WindowVideo
from .feature import register_feature as _register_feature
from .internals import (
    TypedExamplesIterable,
    make_key,
    prepare_split_from_tables,
    register_packaged_module,
    start_pools_safely,
)
from .iterable import READ_BATCH, default_num_shards, shard_ranges
from .references import reference_table
from .root_binding import process_view, stamp_of
from .shards import shard_windows, split_clip_shards

logger = logging.getLogger(__name__)

BUILDER_NAME = "hf_lvf"
# Map-style rows are written this many at a time, as one Arrow table each.
_REFERENCE_CHUNK = 65536


class HfLvf(datasets.GeneratorBasedBuilder):
    """Frame windows of lance-video-frames roots; see the module docstring."""

    BUILDER_CONFIG_CLASS = HfLvfConfig
    config: HfLvfConfig

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # datasets names a builder after its module ("builder"); use the registered name.
        self.name = BUILDER_NAME
        self.info.builder_name = BUILDER_NAME

    # --- the roots, from _metadata.json only ------------------------------------------

    @functools.cached_property
    def _split_roots(self) -> dict[str, tuple[str, ...]]:
        """Split name -> root URIs, in order."""
        if self.config.data_files:
            splits = {
                str(split): roots_of_files(files, str(split))
                for split, files in self.config.data_files.items()
            }
        elif self.config.data_dir:
            splits = {
                split: tuple(str(Path(p).parent) for p in files)
                for split, files in find_roots(self.config.data_dir).items()
            }
        else:
            raise ParameterError(_MISSING_DATA)
        return splits

    @functools.cached_property
    def _root_options(self) -> dict[str, str]:
        """``storage_options`` for hf_lvf/lance: the string entries (datasets adds nested
        fsspec settings such as ``{"hf": {...}}``, which lance does not take)."""
        options = {k: v for k, v in (self.storage_options or {}).items() if isinstance(v, str)}
        if isinstance(self.token, str):  # load_dataset(token=...): hf:// roots read with it
            options.setdefault("hf_token", self.token)
        return options

    @functools.cached_property
    def _layouts(self) -> tuple[RootLayout, ...]:
        uris = list(dict.fromkeys(u for roots in self._split_roots.values() for u in roots))
        return tuple(read_layout(u, storage_options=self._root_options or None) for u in uris)

    @functools.cached_property
    def _fields(self) -> dict[str, str]:
        """The metadata fields of all roots together: a root may lack a field another has, or
        type it otherwise (int here, float there), so values follow the combined fields."""
        return combined_fields(self._layouts)

    @functools.cached_property
    def _views(self) -> tuple[VideoWindows, ...]:
        """One core view per root (no Lance: plans and checks from the metadata only)."""
        views = []
        for layout in self._layouts:
            views.append(
                VideoWindows.from_layout(
                    layout,
                    self.config.params,
                    sizing=self.config.sizing,
                    storage_options=self._root_options or None,
                    fields=self._fields,
                    field_spec=self.config.field_spec,
                    streams=self.config.streams,
                )
            )
        sizes = {v.frame_size for v in views}
        if len(sizes) > 1:
            shown = ", ".join(f"{h}x{w}" for h, w in sorted(sizes))
            raise ParameterError(
                f"the roots of this dataset have frames of different sizes ({shown}, HxW), so "
                f"windows cannot share one Array4D shape; {MIXED_SIZES_HINT}"
            )
        return tuple(views)

    def _features(self, *, references: bool) -> datasets.Features:
        view = self._views[0]
        core = view.features
        # Every key of the core's samples (with windows_in="spans" its span_idx and span fields);
        # the metadata fields are typed below, over all roots.
        features = {name: core[name] for name in core if name not in self._fields}
        if references:  # no roots: each reference names its own (hf_lvf.hf.root_binding)
            features["video"] = WindowVideo(
                array=core["video"],
                frame_skip=self.config.frame_skip,
                crop=self.config.crop,
                max_frame_pixels=self.config.max_frame_pixels,
                proxies=self.config.proxies,
                **self.config.timing,
            )
            for name in view.streams:  # the same references, decoded to the stream's images
                features[name] = WindowVideo(
                    array=core[name],
                    frame_skip=self.config.frame_skip,
                    crop=self.config.crop,
                    max_frame_pixels=self.config.max_frame_pixels,
                    proxies=self.config.proxies,
                    stream=name,
                    **self.config.timing,
                )
        features.update({name: datasets.Value(dtype) for name, dtype in self._fields.items()})
        # The per-frame fields (and their masks), after the metadata, as in samples.
        features.update({name: core[name] for name in core if name not in features})
        return with_class_labels(datasets.Features(features), combined_label_names(self._layouts))

    # --- datasets hooks -----------------------------------------------------------------

    def _info(self) -> datasets.DatasetInfo:
        try:
            features = self._features(references=True)
        finally:
            discard_probe_child()  # started for a schema that was known without it
        return datasets.DatasetInfo(
            description="Fixed-length frame windows of lance-video-frames roots (hf_lvf).",
            features=features,
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        streaming = bool(getattr(dl_manager, "is_streaming", False))
        self.config.check_mode(streaming=streaming)
        index = {layout.uri: i for i, layout in enumerate(self._layouts)}
        at_offsets = [n for view in self._views for n in view.streams_at_offsets]
        if at_offsets and not streaming:
            raise ParameterError(
                f"image stream {at_offsets[0]!r} is read at offsets (frame_offsets= or "
                "delta_timestamps=), which a map-style dataset's rows of references do not hold: "
                "pass streaming=True, or read it with hf_lvf.VideoWindows"
            )
        if not streaming:
            # Hub and object-store roots are copied once into the caches and read there: the
            # cache outlives this call, and credentials must not be stored with it (README).
            where = {"storage_options": self._root_options, "cache_dir": self._cache_downloaded_dir}
            self._layouts = _download_layouts(self._layouts, token=self.token, **where)
        # One builder serves both modes: pixels when streaming, references in the cache.
        self.info.features = self._features(references=not streaming)
        generators = []
        for split, roots in self._split_roots.items():
            shards, clip_kwargs = self._shards([index[uri] for uri in roots]), {}
            if self.config.clips is not None:  # clips of each video per epoch: video ranges
                indices = [index[uri] for uri in roots]
                shards, clip_kwargs = split_clip_shards(self.config, self._views, indices)
            generators.append(
                datasets.SplitGenerator(
                    name=split,
                    # Layouts pickle as their location and the identity of their metadata:
                    # workers map the cached video table instead of receiving it.
                    gen_kwargs={"shards": shards, "layouts": self._layouts, **clip_kwargs},
                )
            )
        return generators

    def _get_examples_iterable_for_split(self, split_generator: datasets.SplitGenerator) -> Any:
        # Streaming only. The examples are built to the features, pixels as numpy arrays.
        return TypedExamplesIterable(
            self._generate_examples,
            split_generator.gen_kwargs,
            self.info.features,
            shard_length=_shard_length,
        )

    def _shards(self, root_indices: Sequence[int]) -> list[tuple[int, int, int, int]]:
        """``(shard_id, root, start, stop)`` window ranges of one split's roots."""
        sizes = [len(self._views[r]) for r in root_indices]
        total = sum(sizes)
        if self.config.shard_windows is not None:
            per_shard = self.config.shard_windows
        else:
            per_shard = -(-total // default_num_shards(total))
        shards = []
        for root, size in zip(root_indices, sizes, strict=True):
            for lo, hi in shard_ranges(size, -(-size // per_shard)):
                shards.append((len(shards), root, lo, hi))
        return shards

    def _generate_examples(
        self,
        shards: list[tuple[int, int, int, int]],
        layouts: tuple[RootLayout, ...],
        skip: int = 0,
        **clip_kwargs: Any,
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        """Streaming: the examples of ``shards``, less the first ``skip`` of the first."""
        # Consecutive shards of one root (up to 64: a worker's share of a huge root is planned
        # as it is read) are read as one sequence, so that the read-ahead runs across their
        # boundaries; keys still count per shard.
        runs = [list(run) for _, run in itertools.groupby(shards, key=lambda shard: shard[1])]
        for part in (run[i : i + 64] for run in runs for i in range(0, len(run), 64)):
            root = part[0][1]
            group = [(shard_id, lo, hi) for shard_id, _, lo, hi in part]
            view = self._view(layouts[root])
            chunks = shard_windows(self.config, view, root, group, **clip_kwargs)
            chunks[0] = chunks[0][skip:]  # what resuming skips of the first shard
            rows = view.iter_samples(np.concatenate(chunks), batch_size=READ_BATCH)
            try:
                for (shard_id, _, _), chunk in zip(group, chunks, strict=True):
                    for example_idx in range(len(chunk)):
                        yield make_key(shard_id, example_idx + skip), next(rows)
                    skip = 0
            finally:
                rows.close()

    def _generate_tables(
        self,
        shards: list[tuple[int, int, int, int]],
        layouts: tuple[RootLayout, ...],
        **clip_kwargs: Any,
    ) -> Iterator[tuple[Any, pa.Table]]:
        """Map-style: the rows of ``shards`` (references, no pixels) as Arrow tables."""
        schema = self.info.features.arrow_schema
        for shard_id, root, lo, hi in shards:
            view = self._view(layouts[root])
            stamp = stamp_of(view.layout)
            (indices,) = shard_windows(self.config, view, root, [(shard_id, lo, hi)], **clip_kwargs)
            for batch, start in enumerate(range(0, len(indices), _REFERENCE_CHUNK)):
                idx = indices[start : start + _REFERENCE_CHUNK]
                yield make_key(shard_id, batch), reference_table(view, stamp, idx, schema)

    def _prepare_split_single(self, gen_kwargs: dict, **kwargs: Any) -> Iterator[Any]:
        # Map-style: whole Arrow tables of references, not one example dict at a time.
        kwargs.pop("split_info", None)
        yield from prepare_split_from_tables(self, gen_kwargs, **kwargs)

    def _view(self, layout: RootLayout) -> VideoWindows:
        """The reading view of a root in this process: opened lazily where the frames are
        read, kept so that consecutive shards of a worker reuse the frames they share."""
        params, sizing, fields = self.config.params, self.config.sizing, self._fields
        options, spec = self._root_options or None, self.config.field_spec
        # A root that grew is another view: its metadata's identity is part of the key.
        key = ("stream", layout.uri, layout.source.identity, params, sizing, repr(spec))
        key += (None if self.config.streams is None else tuple(self.config.streams),)
        key += (tuple(sorted((options or {}).items())), tuple(fields.items()))

        def make() -> VideoWindows:
            for view in self._views:  # the one the builder planned with, if it reads here
                if view.layout.uri == layout.uri and view.layout.source == layout.source:
                    return view
            return VideoWindows.from_layout(
                layout,
                params,
                sizing=sizing,
                storage_options=options,
                fields=fields,
                field_spec=spec,
                streams=self.config.streams,
            )

        return process_view(key, make)


def _shard_length(gen_kwargs: dict) -> int:
    return sum(gen_kwargs.get("clip_counts") or [hi - lo for _, _, lo, hi in gen_kwargs["shards"]])


_MISSING_DATA = (
    "load_dataset('hf_lvf') needs data_dir= (a lance-video-frames root, or a folder whose "
    "sub-folders are roots named after splits: train/, validation/, test/) or data_files= "
    "(roots or their _metadata.json, e.g. {'train': 'clips/train', 'test': 'clips/test'})"
)


def _download_layouts(
    layouts: Sequence[RootLayout], *, token: str | bool | None = None, **where: Any
) -> tuple[RootLayout, ...]:
    """The layouts of hub and object-store roots as layouts of their local copies, what the
    non-streaming builder reads (:func:`~hf_lvf.location.local_copy`: made once per commit,
    or per state of the metadata into ``where["cache_dir"]``). Local roots pass unchanged."""
    out = []
    for layout in layouts:
        local = local_copy(layout.uri, token=token if isinstance(token, str) else None, **where)
        out.append(layout if local is None else layout.with_uri(str(local)))
    return tuple(out)


# --- registration ---------------------------------------------------------------------------


def _code_hash(package: Path = Path(__file__).parents[1]) -> str:
    """Hash of the code that decides what the cache holds: new code, new cache.

    Every module of hf_lvf, not a list of them: which modules shape a sample (its plan,
    fields, spans, features, references) changes with the code, and a module left off a
    list would reuse a stale cache. A change elsewhere only costs one new preparation."""
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _resolve_data_arguments(arguments: dict[str, Any]) -> dict[str, list] | None:
    """``dataset_module_factory`` arguments for ``"hf_lvf"``: roots in place of a ``data_dir``
    (object stores: returns the data files, which ``datasets`` would resolve with fsspec)."""
    data_dir = arguments.get("data_dir") or None  # "" too: never the working directory
    data_files = arguments.get("data_files") or None
    if data_dir is None and data_files is None:
        raise ParameterError(_MISSING_DATA)
    arguments["data_dir"] = data_dir
    if _is_remote(data_dir, data_files):
        # The Lance schema is read by a child process (hf_lvf.frames.probe): it starts now,
        # importing lance while the roots are found and their _metadata.json read.
        start_probe_child()
    if is_store_data(data_dir, data_files):
        options = getattr(arguments.get("download_config"), "storage_options", None)
        return store_data_files(data_dir, data_files, options)
    local_dir = data_dir is not None and "://" not in str(data_dir)
    token = getattr(arguments.get("download_config"), "token", None)
    if data_files is None and local_dir:
        arguments["data_files"] = find_roots(data_dir)
    elif data_files is None and is_hub_uri(data_dir):
        # datasets would make a local path of it: list the roots on the Hub instead, and
        # hand datasets the files found, which it would resolve again (two requests).
        found = hub_data_dir_files(data_dir, token=token)
        arguments["data_files"] = found
        arguments["data_dir"] = None
        return {
            split: [(uri, str(parse_hub_uri(uri).revision)) for uri in uris]
            for split, uris in found.items()
        }
    elif data_files is not None:
        base = Path(data_dir).expanduser() if local_dir else Path.cwd()
        data_files = expand_data_files(data_files, base.resolve())
        # hf:// patterns name a commit from here on: the cache key and every read.
        listings: dict[tuple[str, str], list[str]] = {}
        arguments["data_files"] = pin_data_files(data_files, token=token, listings=listings)
        # Matched against what the Hub answered while pinning them: datasets would list
        # each repo again (a revision and a tree request) to resolve the patterns.
        return hub_data_files(arguments["data_files"], listings)
    return None


def _is_remote(data_dir: Any, data_files: Any) -> bool:
    """Whether ``data_dir`` or any of ``data_files`` is a URI (hf://, s3://...)."""
    if isinstance(data_files, Mapping):
        data_files = [p for patterns in data_files.values() for p in _as_list(patterns)]
    return any("://" in str(p) for p in [data_dir, *_as_list(data_files)] if p is not None)


def _as_list(patterns: Any) -> list[Any]:
    if patterns is None:
        return []
    return [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)


def register() -> None:
    """Make ``load_dataset("hf_lvf", ...)`` resolve to :class:`HfLvf`, and
    ``Dataset.map``/``filter(num_proc=...)`` start their pool with ``forkserver`` instead of
    a fork once this process has used Lance (a fork of it could not read) (idempotent)."""
    _register_feature()
    register_packaged_module(BUILDER_NAME, __name__, _code_hash(), _resolve_data_arguments)
    start_pools_safely(fork_is_unsafe, _check_map_guard)


def _check_map_guard() -> None:
    check_main_guard("Dataset.map/filter(num_proc=...)")


register()

__all__ = ["BUILDER_NAME", "HfLvf", "HfLvfConfig", "find_roots", "register"]
