"""Streams of pixels and streams of references, concatenated and interleaved.

A streaming ``load_dataset("hf_lvf", ...)`` (and ``VideoWindows.to_iterable_dataset``) hands
out windows as pixels, typed ``Array4D``; a map-style one turned into a stream
(``Dataset.to_iterable_dataset``) hands out references, typed ``WindowVideo``, and decodes
them where they are read. ``datasets.concatenate_datasets`` and ``interleave_datasets`` of the
two refuse them ("The features can't be aligned"), and a stream of references combined with
features that do not decode them would hand out reference dicts as videos.

:func:`install` wraps the two functions of ``datasets.combine`` that combine streams
(``_concatenate_iterable_datasets``, ``_interleave_iterable_datasets``, listed in
:data:`hf_lvf.hf.internals.INTERNALS`): where a column holds references in some of the streams
and their decoded ``Array4D`` in others, the streams of references are decoded first, with
datasets' own ``IterableDataset.map(features=...)``, so every stream hands out pixels, each
row read from the root its reference names. Any other combination goes to datasets as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import datasets

from .formatters import WINDOW_FEATURES, mark_windows


def install() -> None:
    """Decode the columns of window features (:data:`hf_lvf.hf.formatters.WINDOW_FEATURES`, each
    with the ``array`` its values decode to) in streams combined with streams of that
    ``array`` (idempotent)."""
    from datasets import combine

    for name in ("_concatenate_iterable_datasets", "_interleave_iterable_datasets"):
        combine_streams = getattr(combine, name, None)
        if combine_streams is not None and not getattr(combine_streams, "_hf_lvf", False):
            setattr(combine, name, _decoding_mixed_first(combine_streams))


def _decoding_mixed_first(combine_streams: Any) -> Any:
    @functools.wraps(combine_streams)
    def combine(dsets: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        return combine_streams(decoded_where_mixed(list(dsets)), *args, **kwargs)

    combine._hf_lvf = True
    return combine


def decoded_where_mixed(dsets: list[Any]) -> list[Any]:
    """``dsets`` with every stream whose column holds references that other streams hold as
    their decoded ``Array4D`` mapped to pixels (its feature becomes that ``Array4D``)."""
    features = [getattr(d, "features", None) for d in dsets]
    decoded: dict[str, Any] = {}  # column -> the Array4D its references decode to
    for column in {name for f in features if f is not None for name in f}:
        kinds = [f.get(column) for f in features if f is not None]
        # decode=False: references asked for as such, left to datasets.
        references = [
            k
            for k in kinds
            if isinstance(k, tuple(WINDOW_FEATURES)) and k.decode and k.array is not None
        ]
        array = references[0].array if references else None
        # One decoded shape, and some stream holds those pixels.
        same = array is not None and all(k.array == array for k in references)
        if same and any(k == array for k in kinds):
            decoded[column] = array
    if not decoded:
        return dsets
    out = []
    for d, f in zip(dsets, features, strict=True):
        mine = {c: a for c, a in decoded.items() if f is not None and c in f and f[c] != a}
        if isinstance(d, datasets.IterableDataset) and mine:
            # map decodes its input (the references), and types its output as pixels.
            handed_out = functools.partial(_handed_out, tuple(mine))
            d = d.map(handed_out, features=datasets.Features({**f, **mine}))
        out.append(d)
    return out


def _handed_out(columns: tuple[str, ...], example: dict[str, Any]) -> dict[str, Any]:
    """The decoded windows of ``example``, known to the formatters as windows (uint8 kept)."""
    mark_windows(example[c] for c in columns)
    return example


__all__ = ["decoded_where_mixed", "install"]
