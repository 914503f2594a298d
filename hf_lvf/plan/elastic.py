"""One global order of an epoch's windows, split across ranks, and a resume state that is a
position in it: the same windows in the same global batches whatever the number of ranks and
DataLoader workers, and an exact resume after that number changes ("elastic determinism", as
MosaicML's ``streaming`` calls it).

Pure numpy and plain dicts, no I/O.

The rule:

- An epoch's **global order** is one sequence of window indices, fixed before any split: for
  a root, its window parameters, a seed, an epoch, ``shuffle`` and a clip selection
  (:class:`~hf_lvf.ClipSampler`'s), every process computes the same one.
- A run **resumed at position** ``P`` (windows of the global order consumed by all ranks
  together; 0 at the start of an epoch) deals the rest to ``R`` ranks in turn: rank ``r``
  reads the windows at positions ``P + r, P + r + R, P + r + 2R, ...``. Nothing is padded
  nor repeated: every window comes once an epoch, the last global batch may leave some ranks
  one window short (``drop_last=True`` drops that tail instead, so that all ranks read as
  many).
- With ``B`` windows a batch on each rank, global batch ``b`` after ``P`` (step ``b`` of all
  ranks) holds positions ``P + b*R*B`` to ``P + (b+1)*R*B``: a contiguous slice of the global
  order, the same slice for any ``R`` that keeps the global batch ``R*B``.
- A rank's DataLoader workers never change that order: a map-style loader asks its sampler
  in order; the streaming dataset hands the rank's batch ``j`` to worker ``j % num_workers``,
  the worker the DataLoader takes batch ``j`` from.
- The **state** after ``k`` steps is ``P + k*R*B`` (capped at the epoch's end; a rank whose
  pass ended holds the end), with the epoch
  and what fixes the order (root identity, window parameters, seed, shuffle, clip
  selection). All ranks of one step hold the same state; a state saved on any ``R`` and any
  number of workers loads into any other, and each rank goes on at the next unseen window.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import ParameterError
from . import check_integer

STATE_FORMAT = "hf_lvf.elastic/1"
# What fixes the global order: a state whose values differ is refused, naming them.
ORDER_KEYS = ("root", "window_params", "windows", "selection", "shuffle", "seed")


def order_identity(
    *,
    root: str,
    window_params: object,
    windows_per_video: np.ndarray,
    selection: str,
    shuffle: bool,
    seed: int,
) -> dict[str, Any]:
    """What fixes an epoch's global order, as plain values: the root's identity (its metadata
    file's), the window parameters, a digest of the windows each video has, the selection
    (``"all"`` or ``ClipSampler``'s ``"clips_per_video=k mode=..."``), shuffle and seed."""
    counts = np.ascontiguousarray(windows_per_video, dtype=np.int64)
    digest = hashlib.sha256(counts.tobytes()).hexdigest()[:16]
    return {
        "root": str(root),
        "window_params": repr(window_params),
        "windows": f"{int(counts.sum())} windows of {len(counts)} videos, {digest}",
        "selection": selection,
        "shuffle": bool(shuffle),
        "seed": int(seed),
    }


def check_world(num_replicas: object, rank: object) -> tuple[int, int]:
    """``(num_replicas, rank)`` of a caller's ``num_replicas=`` and ``rank=``: both or neither
    (``(1, 0)``), ``rank`` in ``[0, num_replicas)``.

    Raises:
        ParameterError: one without the other, or a value out of range, named.
    """
    if (num_replicas is None) != (rank is None):
        raise ParameterError("num_replicas= and rank= go together: give both or neither")
    num_replicas = 1 if num_replicas is None else check_integer("num_replicas", num_replicas, 1)
    rank = 0 if rank is None else check_integer("rank", rank, 0)
    if rank >= num_replicas:
        raise ParameterError(f"rank must be in [0, {num_replicas - 1}], got {rank!r}")
    return num_replicas, rank


def rank_positions(start: int, stop: int, num_replicas: int, rank: int) -> np.ndarray:
    """Positions of the global order rank ``rank`` of ``num_replicas`` reads, resumed at
    ``start``, for an epoch of ``stop`` windows.

    Examples:
        >>> rank_positions(4, 11, 3, 1).tolist()
        [5, 8]
    """
    return np.arange(start + rank, stop, num_replicas, dtype=np.int64)


def rank_count(start: int, stop: int, num_replicas: int, rank: int, drop_last: bool) -> int:
    """Windows rank ``rank`` reads from ``start`` (``drop_last``: as many as every rank has)."""
    if drop_last:
        return max(0, stop - start) // num_replicas
    return max(0, -(-(stop - start - rank) // num_replicas))


def position_after(start: int, stop: int, num_replicas: int, consumed: int) -> int:
    """The global position once every rank took ``consumed`` windows from ``start``, a short
    last batch counted as full (steps times the batch size): each step takes a contiguous
    global batch, so ``start + consumed * num_replicas``, at most the epoch's end. A rank whose
    pass ended says so with any ``consumed`` past its windows."""
    return min(stop, start + consumed * num_replicas)


def make_state(
    identity: Mapping[str, Any], *, kind: str, epoch: int, position: int, total: int
) -> dict[str, Any]:
    """A resume state: plain ints, strings and bools (it goes into a checkpoint as it is)."""
    return {
        "format": STATE_FORMAT,
        "kind": kind,
        "epoch": int(epoch),
        "position": int(position),
        "total": int(total),
        **{key: identity[key] for key in ORDER_KEYS},
    }


def is_state(value: object) -> bool:
    return isinstance(value, Mapping) and value.get("format") == STATE_FORMAT


def check_state(state: object, identity: Mapping[str, Any], what: str) -> tuple[int, int]:
    """``(epoch, position)`` of ``state`` if it was saved over the same global order as
    ``identity``'s, else a ``ParameterError`` naming every value that differs."""
    if not is_state(state):
        raise ParameterError(
            f"{what} cannot load {state!r:.120}: not a hf_lvf resume state (from state_dict())"
        )
    assert isinstance(state, Mapping)
    differ = [key for key in ORDER_KEYS if state.get(key) != identity[key]]
    if differ:
        said = "; ".join(
            f"{key}: saved {state.get(key)!r:.160}, here {identity[key]!r:.160}" for key in differ
        )
        raise ParameterError(
            f"{what} cannot resume from this state, it was saved over another order of windows "
            f"({', '.join(differ)} differ{'s' if len(differ) == 1 else ''}): {said}"
        )
    epoch, position, total = state.get("epoch"), state.get("position"), state.get("total")
    if not all(isinstance(v, int) and v >= 0 for v in (epoch, position, total)):
        raise ParameterError(f"{what} cannot load a state with epoch/position {state!r:.160}")
    assert isinstance(position, int) and isinstance(epoch, int)
    if position > int(total):
        raise ParameterError(f"{what}: position {position} is past the epoch's {total} windows")
    return epoch, position


def combine_states(states: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The one state of a step from the states of all its ranks (or workers' loaders).

    All ranks of one step hold the same global position, so any of them is the state; this
    checks that they agree (same order, epoch and position) and returns it. States of
    different steps are refused: the ranks that ran ahead would read again what they read.
    """
    states = [dict(s) for s in states]
    if not states:
        raise ParameterError("combine_states needs the state of one rank at least")
    first = states[0]
    for number, state in enumerate(states[1:], 1):
        differ = [k for k in (*ORDER_KEYS, "epoch", "position") if state.get(k) != first.get(k)]
        if differ:
            raise ParameterError(
                f"the states of rank 0 and rank {number} are not of one step: "
                + ", ".join(f"{k} {first.get(k)!r:.80} != {state.get(k)!r:.80}" for k in differ)
            )
    return first


__all__ = [
    "ORDER_KEYS",
    "STATE_FORMAT",
    "check_state",
    "combine_states",
    "is_state",
    "make_state",
    "order_identity",
    "position_after",
    "rank_count",
    "rank_positions",
]
