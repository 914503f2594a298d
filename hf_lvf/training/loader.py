"""``safe_dataloader``: a PyTorch ``DataLoader`` whose workers never inherit a Lance handle.

pylance is not fork-safe, and the default start method on Linux is ``fork``.
Workers started by ``forkserver`` are forked from a clean server process, so
they work whatever the parent did before (read a window, iterated a dataset);
``persistent_workers`` keeps them, and their open Lance handles and decoded
frames, from one epoch to the next.

The forkserver imports torch, hf_lvf and ``datasets`` (where the process uses it) once,
so each worker forked from it starts without importing them again.

Both ``forkserver`` and ``spawn`` start a worker by running the main script
again (as ``__mp_main__``), so a script that starts processes (a DataLoader
with workers, ``convert_videos``) must keep its top-level work under
``if __name__ == "__main__":``. :func:`check_main_guard` refuses, before any
process starts, a call from a script without that guard.

Those start methods pickle the dataset to each worker with the standard ``pickle``,
which cannot carry a lambda or a closure (``stream.map(lambda ...)``,
``ds.with_transform(...)``), where a ``fork`` DataLoader would have carried anything.
A dataset that ``pickle`` refuses travels with ``dill`` instead (what ``datasets`` itself
pickles functions with), torch's shared tensors still shared (a stream's epoch, which
``set_epoch`` changes under persistent workers).

Persistent workers still up when the interpreter exits are shut down by an ``atexit``
hook, before ``multiprocessing``'s own: left to the loader's garbage collection, they were
shut down after it, and the resource tracker warned of leaked semaphores.
"""

from __future__ import annotations

import atexit
import functools
import sys
import warnings
import weakref
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ParameterError, UsageError
from ..hf.carry import dumps_by_value, loads_or_error, needs_by_value
from ..plan import check_integer
from ..plan.elastic import check_world
from ..processes import check_main_guard
from ..read.orders import shuffled_in_known_order

# Loaders with persistent workers, shut down at exit (weakly held: one let go shuts down then).
_persistent: weakref.WeakSet[Any] = weakref.WeakSet()


def safe_dataloader(
    dataset: Any,
    *,
    batch_size: int | None = 1,
    num_workers: int = 2,
    multiprocessing_context: str = "forkserver",
    persistent_workers: bool | None = None,
    seed: int | None = None,
    num_replicas: int | None = None,
    rank: int | None = None,
    **kwargs: Any,
) -> Any:
    """A ``torch.utils.data.DataLoader`` over ``dataset`` that is safe with Lance.

    Works with a :class:`~hf_lvf.VideoWindows`, a map-style or streaming dataset
    from ``load_dataset("hf_lvf", ...)``, and ``VideoWindows.to_iterable_dataset()``,
    also when they carry lambdas or closures (``stream.map(lambda r: ...)``,
    ``.filter(...)``, ``ds.with_transform(f)``): what ``pickle`` cannot send to a worker
    goes with ``dill``, as ``datasets`` pickles functions. ``loader.dataset`` is then a
    stand-in that hands on attributes (``set_epoch``, ``features``...) to the dataset.

    Args:
        dataset: what to load from.
        batch_size: as for ``DataLoader``.
        num_workers: worker processes; 0 reads in the calling process.
        multiprocessing_context: start method of the workers; ``"forkserver"`` or
            ``"spawn"`` (``"fork"`` is refused: it is what this helper avoids).
        persistent_workers: keep workers across epochs; default ``num_workers > 0``.
        seed: with ``shuffle=True``, the seed of the permutations (default: drawn from
            ``generator=`` or torch's, as ``shuffle=True``'s is); give it on every rank.
        num_replicas, rank: with ``shuffle=True``, read rank ``rank``'s part of the global
            order (:mod:`hf_lvf.plan.elastic`): every ``num_replicas``-th window from
            position ``rank`` (default 1 and 0: all windows).
        **kwargs: passed on to ``DataLoader`` (``shuffle``, ``collate_fn``, ``timeout``...).
            Without a ``collate_fn``, batches are collated by PyTorch's default, which stacks
            the read-only windows of sequential reads into new tensors; its warning that
            they are not writable (harmless there) is not shown.

    Returns:
        The ``DataLoader``, with ``state_dict()`` and ``load_state_dict(state)`` where its
        order is known (``shuffle=True``, a :class:`~hf_lvf.ClipSampler`, a stream of
        ``to_iterable_dataset(num_replicas=...)``): the position in the global order after
        the batches the loop took (not those the workers read ahead), which loads into a
        loader of any number of ranks and workers. Load it before the first iteration.

    Raises:
        ImportError: torch is not installed.
        ValueError: ``num_workers`` or ``multiprocessing_context`` is not allowed.
        RuntimeError: workers are asked for from a script's top level without the
            ``if __name__ == "__main__":`` guard (see :func:`check_main_guard`).

    Examples:
        >>> import datasets, hf_lvf
        >>> ds = datasets.load_dataset(  # doctest: +SKIP
        ...     "hf_lvf", data_dir="clips/", window_length=16
        ... )
        >>> loader = hf_lvf.safe_dataloader(  # doctest: +SKIP
        ...     ds["train"], batch_size=8, shuffle=True, num_workers=4
        ... )
    """
    try:
        import torch.utils.data  # noqa: F401
    except ImportError as err:
        raise MissingDependencyError(
            "safe_dataloader needs PyTorch: pip install 'hf-lvf[torch]' (or any torch build)"
        ) from err
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ParameterError(f"num_workers must be an integer >= 0, got {num_workers!r}")
    if multiprocessing_context not in ("forkserver", "spawn"):
        raise ParameterError(
            "multiprocessing_context must be 'forkserver' or 'spawn' (pylance is not fork-safe), "
            f"got {multiprocessing_context!r}"
        )
    if batch_size is not None or kwargs.get("batch_sampler") is not None:
        kwargs.setdefault("collate_fn", quiet_default_collate)
    if seed is not None:
        check_integer("seed", seed, 0)
    num_replicas, rank = check_world(num_replicas, rank)
    elastic = (seed, num_replicas) != (None, 1)
    if elastic and kwargs.get("shuffle") is not True:
        raise ParameterError(
            "seed=, num_replicas= and rank= are of safe_dataloader(shuffle=True); pass them to "
            "ClipSampler or to_iterable_dataset otherwise"
        )
    # read ahead of its shuffle (orders.py)
    dataset = shuffled_in_known_order(
        dataset, kwargs, seed=seed, num_replicas=num_replicas, rank=rank
    )
    if kwargs.get("shuffle") is True and elastic:
        raise ParameterError(
            "safe_dataloader(shuffle=True, num_replicas=...) needs a hf_lvf.VideoWindows, got "
            f"{type(dataset).__name__}"
        )
    if batch_size is not None and hasattr(dataset, "with_loader_batch_size"):
        dataset = dataset.with_loader_batch_size(batch_size)  # its workers' share of batches
    loader_class = _resumable_loader_class()
    if num_workers == 0:
        return loader_class(dataset, batch_size=batch_size, num_workers=0, **kwargs)
    check_main_guard("safe_dataloader")
    _carried_functions(kwargs)
    if multiprocessing_context == "forkserver":
        _preload_forkserver()
    if persistent_workers is None:
        persistent_workers = True
    loader = loader_class(
        _carried(dataset),
        batch_size=batch_size,
        num_workers=num_workers,
        multiprocessing_context=multiprocessing_context,
        persistent_workers=persistent_workers,
        **kwargs,
    )
    if persistent_workers:
        # Registered (once) after multiprocessing's own exit hook, so it runs before it.
        atexit.unregister(_shut_down_persistent_workers)
        atexit.register(_shut_down_persistent_workers)
        _persistent.add(loader)
    return loader


@functools.cache
def _resumable_loader_class() -> type:
    """``DataLoader`` with ``state_dict()``/``load_state_dict()`` of the position in the global
    order, counted from the batches its iterator handed to the loop (Mosaic's
    ``StreamingDataLoader`` counts them so too): what workers read ahead is not consumed."""
    from torch.utils.data import DataLoader

    class ResumableDataLoader(DataLoader):
        _taken = 0  # batches of the current pass handed to the loop
        _started = _ended = False

        def __iter__(self) -> Any:
            self._taken, self._started, self._ended = 0, True, False
            for batch in super().__iter__():
                self._taken += 1
                yield batch
            self._ended = True

        def _source(self) -> Any:
            """What holds the order: a sampler of hf_lvf's (``ClipSampler``, the shuffle of
            ``shuffle=True``), else a stream that has ``elastic_state``."""
            sampler = getattr(self, "sampler", None)
            if callable(getattr(sampler, "load_state_dict", None)):
                return sampler
            if callable(getattr(self.dataset, "elastic_state", None)):
                return self.dataset
            raise UsageError(
                "this loader's order is not known, so it has no resume state: use "
                "shuffle=True, a hf_lvf.ClipSampler, or to_iterable_dataset(num_replicas=...)"
            )

        def state_dict(self) -> dict[str, Any]:
            """The position in the global order after the batches the loop took."""
            source = self._source()
            consumed = self._taken * (self.batch_size or 1)  # a short last batch as a full one
            if self._ended:  # this rank's pass is over: the state is the epoch's end
                consumed = 2**62
            if hasattr(source, "elastic_state"):
                return source.elastic_state(consumed)
            return source.state_dict(consumed)

        def load_state_dict(self, state: dict[str, Any]) -> None:
            """Go on from ``state`` (saved by a loader of any number of ranks and workers)."""
            source = self._source()
            if source is self.dataset and self.num_workers and self._started:
                raise UsageError(
                    "load_state_dict after the workers started: their dataset is a copy; "
                    "load the state into a new loader before iterating it"
                )
            source.load_state_dict(state)
            self._taken, self._ended = 0, False

    return ResumableDataLoader


# What every worker of a safe_dataloader imports, whatever its dataset: imported once by the
# forkserver, a worker forked from it starts in a tenth of a second instead of importing them
# (about 2 s of CPU each). The forkserver never imports lance (hf_lvf imports it on first use).
_WORKER_MODULES = ("torch", "hf_lvf")


def _preload_forkserver() -> None:
    """Add what the workers will import to the modules the forkserver imports when it starts
    (``multiprocessing.set_forkserver_preload``; once started, the server, shared by every
    forkserver pool of this process, keeps what it has). ``datasets`` too where this process
    uses it. A script's own imports come with ``__main__``, which stays first; in a notebook,
    ``python -c`` or pytest, whose ``__main__`` is no script, nothing else would preload."""
    from multiprocessing import forkserver

    modules = [*_WORKER_MODULES, *(["datasets"] if "datasets" in sys.modules else [])]
    current = list(getattr(forkserver._forkserver, "_preload_modules", ["__main__"]))
    forkserver.set_forkserver_preload(list(dict.fromkeys([*current, *modules])))


def _shut_down_persistent_workers() -> None:
    """Shut down the workers that loaders of :func:`safe_dataloader` keep between epochs (the
    ``atexit`` hook): what torch's iterator does when it is collected (``_shutdown_workers``,
    idempotent), while ``multiprocessing`` can still clean up after them."""
    for loader in list(_persistent):
        shutdown = getattr(getattr(loader, "_iterator", None), "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
    _persistent.clear()


def _carried(dataset: Any) -> Any:
    """``dataset``, or where ``pickle`` cannot carry it to a worker (see
    :func:`~hf_lvf.hf.carry.needs_by_value`), a stand-in that carries it with ``dill``, what
    comes from ``__main__`` by value (and is the dataset again in the worker)."""
    if not needs_by_value(dataset):
        return dataset
    from torch.utils.data import IterableDataset

    kinds = _stand_in_classes()
    return kinds[1](dataset) if isinstance(dataset, IterableDataset) else kinds[0](dataset)


def _carried_functions(kwargs: dict[str, Any]) -> None:
    """``collate_fn`` and ``worker_init_fn`` in ``kwargs`` carried as :func:`_carried` carries
    the dataset, where ``pickle`` could not (defined under the main guard, nested...)."""
    for name in ("collate_fn", "worker_init_fn"):
        function = kwargs.get(name)
        if function is not None and needs_by_value(function):
            kwargs[name] = _CarriedCall(function, name)


class _CarriedCall:
    """A function that travels to the worker by value; a worker that cannot load it raises the
    worker's error at the first call, which the DataLoader hands on to the parent."""

    def __init__(self, function: Any, name: str):
        self.function, self.name = function, name

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)

    def __reduce__(self) -> tuple[Any, tuple[bytes, str]]:
        return (_load_call, (_dill_dumps(self.function), self.name))


def _load_call(payload: bytes, name: str) -> Any:
    function, error = loads_or_error(payload, f"The DataLoader's {name}")
    return function if error is None else _Failing(error)


class _Failing:
    """Stands for what a worker could not load: raises its error when used, in the worker, so
    that the DataLoader re-raises it in the parent (instead of a worker that just died)."""

    def __init__(self, error: Exception):
        self.error = error

    def __call__(self, *args: Any) -> Any:
        raise self.error

    def __getitem__(self, index: Any) -> Any:
        raise self.error

    def __iter__(self) -> Any:
        raise self.error


@functools.cache
def _stand_in_classes() -> tuple[type, type]:
    """The map-style and iterable stand-ins (torch's base classes, so DataLoader knows them)."""
    from torch.utils.data import Dataset, IterableDataset

    class _ByDill:
        def __init__(self, dataset: Any):
            self.dataset = dataset

        def __getattr__(self, name: str) -> Any:  # set_epoch, features, ... of the dataset
            return getattr(self.__dict__["dataset"], name)

        def __reduce__(self) -> tuple[Any, tuple[bytes]]:
            return (_undill, (_dill_dumps(self.dataset),))

    class MapByDill(_ByDill, Dataset):
        def __len__(self) -> int:
            return len(self.dataset)

        def __getitem__(self, index: Any) -> Any:
            return self.dataset[index]

    class IterableByDill(_ByDill, IterableDataset):
        def __iter__(self) -> Any:
            return iter(self.dataset)

    return MapByDill, IterableByDill


def _dill_dumps(value: Any) -> bytes:
    # What multiprocessing's own pickler adds (torch registers its tensors there): a shared
    # tensor stays shared with the worker instead of being copied into it.
    return dumps_by_value(value, ForkingPickler._extra_reducers)


def _undill(payload: bytes) -> Any:
    dataset, error = loads_or_error(payload, "The DataLoader's dataset")
    return dataset if error is None else _Failing(error)


def quiet_default_collate(batch: Any) -> Any:
    """PyTorch's ``default_collate`` without its warning that a numpy array is not writable.

    The windows of a sequential read are read-only views (``VideoWindows.iter_samples``);
    ``default_collate`` makes each a tensor that shares its memory, warns once per process
    that writing into it would be undefined, then stacks them into a new tensor, so nothing
    can write into them. A ``collate_fn`` of the caller's own might, so it keeps the warning.

    A sample's ``frame_indices`` becomes one int32 ``(B, window_length)`` tensor. Samples of
    :class:`~hf_lvf.VideoWindows` (and streams) carry it as an int32 array, which any
    ``default_collate`` stacks; rows of a map-style dataset without a format carry it as a
    list, as ``datasets`` decodes a ``List`` feature, which ``default_collate`` would make
    ``window_length`` tensors of shape ``(B,)``: those lists are made arrays first.
    """
    from torch.utils.data import default_collate

    if batch and isinstance(batch[0], dict) and isinstance(batch[0].get("frame_indices"), list):
        batch = [{**s, "frame_indices": np.asarray(s["frame_indices"], np.int32)} for s in batch]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return default_collate(batch)


__all__ = ["check_main_guard", "quiet_default_collate", "safe_dataloader"]
