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

- ``streaming=True``: window-range shards (:func:`hf_lvf.iterable.window_ranges`)
  as the list in ``gen_kwargs``; each shard reads through the core view, in
  batches, reusing frames across windows. Features are the core's (``video`` an
  ``Array4D``).
- map-style: the Arrow cache holds one small row per window: the reference
  (:class:`hf_lvf.WindowVideo`, decoded when a row is read) and the scalar
  columns, never pixels.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from ._datasets import TypedExamplesIterable, make_key, register_packaged_module
from ._feature import WindowVideo, process_view
from ._feature import register as _register_feature
from ._version import __version__
from .iterable import READ_BATCH, default_num_shards, window_ranges
from .layout import SAMPLE_KEYS, RootLayout, metadata_fields, metadata_values, read_layout
from .location import (
    expand_data_files,
    find_roots,
    hub_data_dir_files,
    is_hub_uri,
    is_store_data,
    local_copy,
    pin_data_files,
    roots_of_files,
    store_data_files,
)
from .plan import WindowParams
from .sizes import DEFAULT_MAX_FRAME_PIXELS, MIXED_SIZES_HINT, Crop, FrameSizing
from .windows import VideoWindows

logger = logging.getLogger(__name__)

BUILDER_NAME = "hf_lvf"
# Map-style rows are built this many at a time, so a huge shard never sits in memory whole.
_REFERENCE_CHUNK = 1024


@dataclass(kw_only=True)
class HfLvfConfig(datasets.BuilderConfig):
    """Options of ``load_dataset("hf_lvf", ...)``; all take part in the cache key.

    Args:
        window_length: frames per window (>= 1).
        frame_skip: frames skipped between two frames of a window (>= 0).
        hop_size: frames between the starts of consecutive windows of a video (>= 1).
        min_video_frames: videos with fewer frames yield no window.
        frame_size: ``(H, W)`` to resize every frame to; needed when videos differ in size.
        crop: ``"none"`` stretches frames to ``frame_size``; ``"center"`` keeps their aspect
            ratio: scales them to cover ``frame_size`` and cuts out the middle.
        max_frame_pixels: roots whose videos declare larger frames (``H * W``) are
            refused, and so is a larger ``frame_size``; default 2**25.
        max_batch_bytes: a read whose decoded frames need more is refused before
            allocating; default: half the reading machine's physical memory.
        shard_windows: windows per shard (streaming and cache generation); default:
            a power of two up to 64 shards per split with >= 8 windows each.

    Raises:
        ValueError: a value is out of range (the message names it).
    """

    window_length: int = 1
    frame_skip: int = 0
    hop_size: int = 1
    min_video_frames: int | None = None
    frame_size: tuple[int, int] | None = None
    crop: Crop = "none"
    max_frame_pixels: int = DEFAULT_MAX_FRAME_PIXELS
    max_batch_bytes: int | None = None
    shard_windows: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _ = self.params  # validates window_length, frame_skip, hop_size, min_video_frames
        self.frame_size = self.sizing.frame_size  # validates the size options
        if self.shard_windows is not None and (
            isinstance(self.shard_windows, bool)
            or not isinstance(self.shard_windows, int)
            or self.shard_windows < 1
        ):
            raise ValueError(f"shard_windows must be an integer >= 1, got {self.shard_windows!r}")

    @property
    def params(self) -> WindowParams:
        return WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=self.hop_size,
            min_video_frames=self.min_video_frames,
        )

    @property
    def sizing(self) -> FrameSizing:
        return FrameSizing(
            frame_size=self.frame_size,
            crop=self.crop,
            max_frame_pixels=self.max_frame_pixels,
            max_batch_bytes=self.max_batch_bytes,
        )


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
            raise ValueError(_MISSING_DATA)
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
                )
            )
        sizes = {v.frame_size for v in views}
        if len(sizes) > 1:
            shown = ", ".join(f"{h}x{w}" for h, w in sorted(sizes))
            raise ValueError(
                f"the roots of this dataset have frames of different sizes ({shown}, HxW), so "
                f"windows cannot share one Array4D shape; {MIXED_SIZES_HINT}"
            )
        return tuple(views)

    def _features(self, *, references: bool) -> datasets.Features:
        view = self._views[0]
        core = view.features
        fields = metadata_fields([video for v in self._views for video in v.videos])
        features = {name: core[name] for name in SAMPLE_KEYS}
        if references:
            features["video"] = WindowVideo(
                array=core["video"],
                frame_skip=self.config.frame_skip,
                roots=tuple(layout.uri for layout in self._layouts),
                crop=self.config.crop,
                max_frame_pixels=self.config.max_frame_pixels,
            )
        features.update({name: datasets.Value(dtype) for name, dtype in fields.items()})
        return datasets.Features(features)

    # --- datasets hooks -----------------------------------------------------------------

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="Fixed-length frame windows of lance-video-frames roots (hf_lvf).",
            features=self._features(references=True),
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        streaming = bool(getattr(dl_manager, "is_streaming", False))
        index = {layout.uri: i for i, layout in enumerate(self._layouts)}
        if not streaming:
            # Hub and object-store roots are copied once into the caches and read there: the
            # cache outlives this call, and credentials must not be stored with it (README).
            where = {"storage_options": self._root_options, "cache_dir": self._cache_downloaded_dir}
            self._layouts = _download_layouts(self._layouts, token=self.token, **where)
        # One builder serves both modes: pixels when streaming, references in the cache.
        self.info.features = self._features(references=not streaming)
        generators = []
        for split, roots in self._split_roots.items():
            shards = self._shards([index[uri] for uri in roots])
            generators.append(
                datasets.SplitGenerator(
                    name=split,
                    gen_kwargs={
                        "shards": shards,
                        "layouts": self._layouts,
                        "references": not streaming,
                    },
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
            for lo, hi in window_ranges(size, -(-size // per_shard)):
                shards.append((len(shards), root, lo, hi))
        return shards

    def _generate_examples(
        self,
        shards: list[tuple[int, int, int, int]],
        layouts: tuple[RootLayout, ...],
        references: bool,
        skip: int = 0,
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        """The examples of ``shards``, less the first ``skip`` of the first (streaming resume)."""
        # The metadata fields of all roots: a root may lack a field another has, or type it
        # differently (int here, float there), so values are set from the combined fields.
        fields = metadata_fields([video for layout in layouts for video in layout.videos])
        options = self._root_options
        # Consecutive shards of one root are read as one sequence, so that the read-ahead
        # runs across their boundaries; keys still count per shard.
        for root, group in itertools.groupby(shards, key=lambda shard: shard[1]):
            group = [(shard_id, lo, hi) for shard_id, _, lo, hi in group]
            videos = layouts[root].videos
            view = _view(layouts[root], self.config.params, self.config.sizing, options)
            if skip:
                shard_id, lo, hi = group[0]
                group[0] = (shard_id, min(lo + skip, hi), hi)
            indices = np.concatenate([np.arange(lo, hi, dtype=np.int64) for _, lo, hi in group])
            rows = (
                _reference_rows(view, root, indices)
                if references
                else view.iter_samples(indices, batch_size=READ_BATCH)
            )
            try:
                for shard_id, lo, hi in group:
                    for example_idx in range(hi - lo):
                        row = next(rows)
                        row.update(metadata_values(videos[row["video_idx"]], fields))
                        yield make_key(shard_id, example_idx + skip), row
                    skip = 0
            finally:
                rows.close()


def _shard_length(gen_kwargs: dict) -> int:
    return sum(hi - lo for _, _, lo, hi in gen_kwargs["shards"])


_MISSING_DATA = (
    "load_dataset('hf_lvf') needs data_dir= (a lance-video-frames root, or a folder whose "
    "sub-folders are roots named after splits: train/, validation/, test/) or data_files= "
    "(roots or their _metadata.json, e.g. {'train': 'clips/train', 'test': 'clips/test'})"
)


def _reference_rows(view: VideoWindows, root: int, indices: np.ndarray) -> Iterator[dict[str, Any]]:
    """Map-style rows: what identifies each window, no pixels (built a chunk at a time)."""
    for lo in range(0, len(indices), _REFERENCE_CHUNK):
        chunk = indices[lo : lo + _REFERENCE_CHUNK]
        video_idx, start_frame = view.plan.locate(chunk)
        references = [
            {"root": root, "video_idx": v, "start_frame": start}
            for v, start in zip(video_idx.tolist(), start_frame.tolist(), strict=True)
        ]
        frame_indices = view.plan.frame_indices(start_frame)
        yield from view._samples(chunk, video_idx, start_frame, frame_indices, references)


# One reading view per root and parameters per process: opened lazily where the frames are read,
# kept so that consecutive shards of a worker reuse the frames they share.
def _view(
    layout: RootLayout,
    params: WindowParams,
    sizing: FrameSizing,
    storage_options: Mapping[str, str] | None,
) -> VideoWindows:
    options = tuple(sorted((storage_options or {}).items()))
    # A root that grew is another view: the version its metadata names is part of the key.
    key = ("stream", layout.uri, layout.raw.get("lance_version"), params, sizing, options)
    return process_view(
        key,
        lambda: VideoWindows.from_layout(
            layout, params, sizing=sizing, storage_options=storage_options or None
        ),
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
        out.append(layout if local is None else dataclasses.replace(layout, uri=str(local)))
    return tuple(out)


# --- registration ---------------------------------------------------------------------------


def _code_hash() -> str:
    """Hash of the code that decides what the cache holds: new code, new cache."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    names = ("builder.py", "_datasets.py", "_feature.py", "iterable.py", "plan.py", "layout.py")
    names += ("samples.py", "sizes.py")
    for name in (*names, "windows.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def _resolve_data_arguments(arguments: dict[str, Any]) -> dict[str, list] | None:
    """``dataset_module_factory`` arguments for ``"hf_lvf"``: roots in place of a ``data_dir``
    (object stores: returns the data files, which ``datasets`` would resolve with fsspec)."""
    data_dir = arguments.get("data_dir")
    data_files = arguments.get("data_files")
    if data_dir is None and data_files is None:
        raise ValueError(_MISSING_DATA)
    if is_store_data(data_dir, data_files):
        options = getattr(arguments.get("download_config"), "storage_options", None)
        return store_data_files(data_dir, data_files, options)
    local_dir = data_dir is not None and "://" not in str(data_dir)
    token = getattr(arguments.get("download_config"), "token", None)
    if data_files is None and local_dir:
        arguments["data_files"] = find_roots(data_dir)
    elif data_files is None and is_hub_uri(data_dir):
        # datasets would make a local path of it: list the roots on the Hub instead.
        arguments["data_files"] = hub_data_dir_files(data_dir, token=token)
        arguments["data_dir"] = None
    elif data_files is not None:
        base = Path(data_dir).expanduser() if local_dir else Path.cwd()
        data_files = expand_data_files(data_files, base.resolve())
        # hf:// patterns name a commit from here on: the cache key and every read.
        arguments["data_files"] = pin_data_files(data_files, token=token)


def register() -> None:
    """Make ``load_dataset("hf_lvf", ...)`` resolve to :class:`HfLvf` (idempotent)."""
    _register_feature()
    register_packaged_module(BUILDER_NAME, __name__, _code_hash(), _resolve_data_arguments)


register()

__all__ = ["BUILDER_NAME", "HfLvf", "HfLvfConfig", "find_roots", "register"]
