"""Every touch of ``datasets`` internals, in one place.

hf_lvf uses the public API of ``datasets`` wherever one exists. Where none does,
it relies on these private names (tested with datasets 4.0.0, 4.4.2, 4.7.0,
4.8.2, 4.8.5 and 5.2.0; ``tests/test_datasets_glue.py`` fails with a clear
message naming any that moved):

- ``datasets.packaged_modules._PACKAGED_DATASETS_MODULES``: the table
  ``load_dataset`` looks names up in before folders and the Hub;
  ``register_packaged_module`` puts ``"hf_lvf"`` there.
- ``datasets.load.dataset_module_factory``: wrapped for one name only, so
  hf_lvf can turn ``data_dir`` into roots before ``datasets`` globs it (and
  refuse a missing ``data_dir`` before it globs the working directory).
  Optional: without it, the builder works from ``datasets``' own glob.
- ``datasets.load.DatasetModule``, ``datasets.data_files.DataFilesDict`` / ``DataFilesList``:
  the module of roots on an object store, their data files resolved by hf_lvf, not fsspec.
- ``datasets.features.features._FEATURE_TYPES`` / ``register_feature``: the
  ``WindowVideo`` feature, so cached datasets deserialise it.
- ``datasets.formatting._FORMAT_TYPES``, ``PythonFormatter``, ``NumpyFormatter``,
  ``TorchFormatter``: replaced by subclasses (in :mod:`hf_lvf.hf.formatters`) that decode
  the window columns of a batch with one read, keep windows in their dtype (uint8)
  instead of upcasting them to int64, and behave exactly like the originals otherwise;
  they override ``_recursive_tensorize`` and call ``_consolidate`` of both.
- ``datasets.iterable_dataset.ExamplesIterable`` / ``_BaseExamplesIterable`` and
  ``datasets.utils.sharding._merge_gen_kwargs`` / ``_shuffle_gen_kwargs`` /
  ``_split_gen_kwargs``: the examples iterables of the streaming builder and of
  ``VideoWindows.to_iterable_dataset``.
- ``datasets.iterable_dataset._convert_to_arrow``, which turns a stream's examples into the
  tables of its ``arrow``/``pandas``/``polars`` formats: wrapped so that dense arrays become
  columns directly (:func:`hf_lvf.hf.formatters.rows_table`), not nested lists (~2 s a
  16x224x224 window), the rest as there (``cast_to_python_objects``). Optional.
- ``datasets.combine._concatenate_iterable_datasets`` / ``_interleave_iterable_datasets``:
  wrapped so that streams of references combined with streams of pixels are decoded first
  (:mod:`hf_lvf.hf.combining`). Optional (else datasets' "features can't be aligned").
- ``datasets.arrow_dataset.mp`` (``multiprocess``), where ``Dataset.map``/``filter`` with
  ``num_proc`` start their pool (a fork on Linux): behind :class:`_SafePools`, which starts it
  with ``forkserver`` once this process used Lance. Optional (else: ``ForkSafetyError``).
- ``datasets.builder.ArrowBasedBuilder._prepare_split_single``: how the map-style builder
  writes its reference rows, whole Arrow tables, not one example dict at a time.
- ``datasets.iterable_dataset.ShufflingConfig`` (datasets < 4.8 only) and
  ``datasets.builder.Key`` (datasets >= 5 only): looked up when used.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import datasets
import numpy as np
from datasets.formatting.formatting import PythonFormatter
from datasets.formatting.np_formatter import NumpyFormatter
from datasets.formatting.torch_formatter import TorchFormatter
from datasets.iterable_dataset import ExamplesIterable
from datasets.iterable_dataset import _BaseExamplesIterable as BaseExamplesIterable
from datasets.utils.sharding import _merge_gen_kwargs, _shuffle_gen_kwargs, _split_gen_kwargs

from . import carry, combining
from .formatters import (
    WINDOW_FEATURES,
    WindowAwareNumpyFormatter,
    WindowAwarePythonFormatter,
    WindowAwareTorchFormatter,
    mark_windows,
    wrap_convert_to_arrow,
)

logger = logging.getLogger(__name__)

TESTED_VERSIONS = ("4.0.0", "4.4.2", "4.7.0", "4.8.2", "4.8.5", "5.2.0")
# (module, name, required): what the docstring lists, for check_internals().
INTERNALS = (
    ("datasets.packaged_modules", "_PACKAGED_DATASETS_MODULES", True),
    ("datasets.load", "dataset_module_factory", False),
    ("datasets.load", "DatasetModule", False),
    ("datasets.data_files", "DataFilesDict", False),
    ("datasets.data_files", "DataFilesList", False),
    ("datasets.features.features", "_FEATURE_TYPES", True),
    ("datasets.features.features", "register_feature", True),
    ("datasets.formatting", "_FORMAT_TYPES", True),
    ("datasets.formatting.formatting", "PythonFormatter", True),
    ("datasets.formatting.np_formatter", "NumpyFormatter", True),
    ("datasets.formatting.torch_formatter", "TorchFormatter", True),
    ("datasets.formatting.np_formatter.NumpyFormatter", "_recursive_tensorize", True),
    ("datasets.formatting.np_formatter.NumpyFormatter", "_consolidate", True),
    ("datasets.formatting.torch_formatter.TorchFormatter", "_recursive_tensorize", True),
    ("datasets.formatting.torch_formatter.TorchFormatter", "_consolidate", True),
    ("datasets.iterable_dataset", "ExamplesIterable", True),
    ("datasets.iterable_dataset", "_BaseExamplesIterable", True),
    ("datasets.utils.sharding", "_merge_gen_kwargs", True),
    ("datasets.utils.sharding", "_shuffle_gen_kwargs", True),
    ("datasets.utils.sharding", "_split_gen_kwargs", True),
    ("datasets.iterable_dataset", "_convert_to_arrow", False),
    ("datasets.combine", "_concatenate_iterable_datasets", False),
    ("datasets.combine", "_interleave_iterable_datasets", False),
    ("datasets.features.features", "cast_to_python_objects", True),
    ("datasets.arrow_dataset", "mp", False),
    ("datasets.builder", "ArrowBasedBuilder", True),  # its _prepare_split_single
)


def check_internals() -> list[str]:
    """What is missing of :data:`INTERNALS` in the installed ``datasets``, one message each."""
    problems = []
    for module_name, name, required in INTERNALS:
        owner = _import_dotted(module_name)
        if owner is None or not hasattr(owner, name):
            need = "needs" if required else "can use"
            problems.append(
                f"hf_lvf {need} {module_name}.{name}, which datasets {datasets.__version__} does "
                f"not have (hf_lvf is tested with datasets {', '.join(TESTED_VERSIONS)})"
            )
    return problems


def _import_dotted(path: str) -> Any:
    """The module, or the class inside a module (``"pkg.module.Class"``), at ``path``."""
    module_name, attribute = path, None
    while module_name:
        try:
            owner = importlib.import_module(module_name)
        except ImportError:
            module_name, _, attribute = module_name.rpartition(".")
            continue
        return getattr(owner, attribute, None) if attribute else owner
    return None


# --- registration ---------------------------------------------------------------------------


def register_window_feature(feature_type: type, name: str) -> None:
    """Register a feature type with ``datasets``, and the formatters that keep its dtype.

    Idempotent; datasets' own numpy and torch formatters are replaced, never one
    that somebody else registered.
    """
    from datasets import formatting

    feature_types = datasets.features.features._FEATURE_TYPES
    if feature_types.get(name) is not feature_type:
        with warnings.catch_warnings():  # "register_feature is experimental": known, pinned
            warnings.simplefilter("ignore", UserWarning)
            datasets.features.features.register_feature(feature_type, name)
    if feature_type not in WINDOW_FEATURES:
        WINDOW_FEATURES.append(feature_type)
    format_types = formatting._FORMAT_TYPES
    if format_types.get(None) is PythonFormatter:
        format_types[None] = WindowAwarePythonFormatter
    if format_types.get("numpy") is NumpyFormatter:
        format_types["numpy"] = WindowAwareNumpyFormatter
    if format_types.get("torch") is TorchFormatter:
        format_types["torch"] = WindowAwareTorchFormatter
    wrap_convert_to_arrow()
    combining.install()


def start_pools_safely(fork_is_unsafe: Callable[[], bool], check: Callable[[], None]) -> None:
    """Make ``Dataset.map``/``filter(num_proc=...)`` start their workers with ``forkserver``
    while ``fork_is_unsafe()``, ``check()`` first (idempotent; see :class:`_SafePools`)."""
    from datasets import arrow_dataset

    pools = getattr(arrow_dataset, "mp", None)
    if pools is None:
        logger.warning("datasets.arrow_dataset.mp not found: map(num_proc=...) forks")
    elif not isinstance(pools, _SafePools):
        arrow_dataset.mp = _SafePools(pools, fork_is_unsafe, check)


class _SafePools:
    """``datasets.arrow_dataset``'s ``mp`` (``multiprocess``), whose ``Pool`` starts its workers
    with ``forkserver`` where it would fork a process that could not use Lance; ``check``
    first, as a fresh interpreter runs the main script again. Shards and functions go to the
    workers with ``dill`` either way."""

    def __init__(self, module: Any, fork_is_unsafe: Callable[[], bool], check: Callable[[], None]):
        self._module, self._fork_is_unsafe, self._check = module, fork_is_unsafe, check

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def Pool(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802  (multiprocess' name)
        mp = self._module
        forks = (mp.get_start_method(allow_none=True) or mp.get_all_start_methods()[0]) == "fork"
        if not forks or not self._fork_is_unsafe():
            return mp.Pool(*args, **kwargs)
        self._check()
        context = self._module.get_context("forkserver")
        # Imported once by the server (which never uses Lance), not by every worker (~1 s).
        context.set_forkserver_preload(["__main__", "datasets", "hf_lvf"])
        return carry.ByValuePool(context.Pool(*args, **kwargs))


def register_packaged_module(
    name: str,
    module: str,
    code_hash: str,
    resolve_arguments: Callable[[dict[str, Any]], Any],
) -> None:
    """Make ``load_dataset(name, ...)`` load the builder in ``module`` (idempotent).

    ``resolve_arguments(arguments)`` is called with the bound arguments of
    ``dataset_module_factory`` for ``name`` only (``path``, ``data_dir``,
    ``data_files``, ``download_config``...) and may change them in place. If it returns
    ``{split: [(file, identity), ...]}`` instead of ``None``, those are the data files,
    already resolved: the module is built from them, and ``datasets`` resolves nothing
    (``identity`` changes when the file does; it is part of the cache key).
    """
    from datasets import load, packaged_modules

    packaged_modules._PACKAGED_DATASETS_MODULES[name] = (module, code_hash)
    factory = getattr(load, "dataset_module_factory", None)
    if factory is None:
        logger.warning("datasets.load.dataset_module_factory not found: data_dir is globbed")
    elif not getattr(factory, "_hf_lvf_guard", False):
        load.dataset_module_factory = _guard_factory(factory, name, resolve_arguments)


def _guard_factory(factory: Any, name: str, resolve: Callable[[dict[str, Any]], None]) -> Any:
    signature = inspect.signature(factory)

    @functools.wraps(factory)
    def dataset_module_factory(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        if bound.arguments.get("path") == name:
            resolved = resolve(bound.arguments)
            if resolved is not None:
                return _module_of_files(name, resolved)
        return factory(*bound.args, **bound.kwargs)

    dataset_module_factory._hf_lvf_guard = True
    return dataset_module_factory


def prepare_split_from_tables(builder: Any, gen_kwargs: dict, **kwargs: Any) -> Iterator[Any]:
    """``builder._prepare_split_single``, writing ``builder._generate_tables``' tables."""
    return datasets.ArrowBasedBuilder._prepare_split_single(builder, gen_kwargs, **kwargs)


def _module_of_files(name: str, files: dict[str, list[tuple[str, str]]]) -> Any:
    """The ``DatasetModule`` ``datasets``' packaged-module factory would build for ``name``
    from these resolved data files (as ``PackagedDatasetModuleFactory.get_module`` does)."""
    from datasets.data_files import DataFilesDict, DataFilesList
    from datasets.load import DatasetModule
    from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES

    module_path, code_hash = _PACKAGED_DATASETS_MODULES[name]
    data_files = DataFilesDict(
        {
            split: DataFilesList([uri for uri, _ in items], [(tag,) for _, tag in items])
            for split, items in files.items()
        }
    )
    return DatasetModule(module_path, code_hash, {"data_files": data_files, "dataset_name": name})


# --- examples iterables ---------------------------------------------------------------------

#: The ``gen_kwargs`` key of :class:`TypedExamplesIterable`'s per-epoch draws.
EPOCH_DRAWS = "clip_draws"


def make_key(shard_id: int, example_idx: int) -> Any:
    """An example key: ``datasets.builder.Key`` on datasets >= 5, a string before."""
    try:
        from datasets.builder import Key
    except ImportError:  # datasets < 5 has plain keys
        return f"{shard_id}_{example_idx}"
    return Key(shard_id, example_idx)


def shuffling_kwargs(seed: int) -> dict[str, Any]:
    """Extra ``IterableDataset(...)`` arguments that mark a dataset as shuffled.

    datasets < 4.8 tells the examples iterable about the epoch only if the dataset is
    marked as shuffled; no buffer is added. Empty on newer versions.
    """
    if "shuffling" not in inspect.signature(datasets.IterableDataset.__init__).parameters:
        return {}
    from datasets.iterable_dataset import ShufflingConfig

    config = {"generator": np.random.default_rng(seed)}
    if "_original_seed" in inspect.signature(ShufflingConfig).parameters:
        config["_original_seed"] = seed  # so that nodes may split it
    return {"shuffling": ShufflingConfig(**config)}


class TypedExamplesIterable(ExamplesIterable):
    """datasets' ``ExamplesIterable`` (shards = the lists in ``gen_kwargs``) that declares its
    examples already typed with ``features``, and reads all its shards in one call.

    ``IterableDataset`` then passes them through as they are: no per-example
    encode/decode, and on datasets < 4.8.4 no round trip of the pixels through Arrow
    (which turns them into nested lists). Shuffling and sharding keep the class.

    Unlike datasets' own, it calls ``generate_examples_fn`` once, with the remaining
    shards merged and ``skip=`` the examples of the first one already read (so a reader
    can read ahead across shards, and resuming decodes nothing it skips);
    ``shard_length(gen_kwargs)`` says how many examples a single shard yields, which
    keeps ``state_dict()`` counting per shard.

    A tuple under :data:`EPOCH_DRAWS` in ``gen_kwargs`` gains one number of the generator
    of every ``shuffle_data_sources`` call (``IterableDataset`` makes one per epoch, from the
    epoch, in every worker and node alike): what a per-epoch selection is seeded with.
    """

    def __init__(
        self,
        generate_examples_fn: Any,
        kwargs: dict,
        features: datasets.Features,
        shard_length: Callable[[dict], int],
    ):
        super().__init__(generate_examples_fn, kwargs)
        self._typed_features = features
        self._shard_length = shard_length

    @property
    def is_typed(self) -> bool:
        return True

    @property
    def features(self) -> datasets.Features:
        return self._typed_features

    def __iter__(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        state = self._state_dict
        first = state["shard_idx"] if state else 0
        skip = state["shard_example_idx"] if state else 0
        jobs = _split_gen_kwargs(self.kwargs, max_num_jobs=self.num_shards)[first:]
        if not jobs:
            return
        examples = iter(self.generate_examples_fn(**_merge_gen_kwargs(jobs), skip=skip))
        try:
            for position, job in enumerate(jobs):
                for _ in range((skip if position == 0 else 0), self._shard_length(job)):
                    example = next(examples)
                    mark_windows((example[1].get("video"),))
                    if state:
                        state["shard_example_idx"] += 1
                    yield example
                if state:
                    state["shard_idx"] += 1
                    state["shard_example_idx"] = 0
        finally:
            close = getattr(examples, "close", None)
            if close is not None:
                close()

    def _with_kwargs(self, kwargs: dict) -> TypedExamplesIterable:
        return TypedExamplesIterable(
            self.generate_examples_fn, kwargs, self._typed_features, self._shard_length
        )

    def shuffle_data_sources(self, generator: np.random.Generator) -> TypedExamplesIterable:
        kwargs = _shuffle_gen_kwargs(copy.deepcopy(generator), self.kwargs)
        if EPOCH_DRAWS in kwargs:  # a selection that changes with the epoch learns it here
            draw = int(copy.deepcopy(generator).integers(0, 2**63))
            kwargs[EPOCH_DRAWS] = (*kwargs[EPOCH_DRAWS], draw)
        return self._with_kwargs(kwargs)

    def shard_data_sources(self, num_shards: int, index: int, contiguous: bool = True):
        gen_kwargs_list = _split_gen_kwargs(self.kwargs, max_num_jobs=self.num_shards)
        shard_indices = self.split_shard_indices_by_worker(num_shards, index, contiguous=contiguous)
        return self._with_kwargs(_merge_gen_kwargs([gen_kwargs_list[i] for i in shard_indices]))

    def reshard_data_sources(self) -> TypedExamplesIterable:
        return self._with_kwargs(self.kwargs)


__all__ = [
    "EPOCH_DRAWS",
    "INTERNALS",
    "BaseExamplesIterable",
    "TypedExamplesIterable",
    "check_internals",
    "make_key",
    "register_packaged_module",
    "register_window_feature",
    "shuffling_kwargs",
    "start_pools_safely",
]
