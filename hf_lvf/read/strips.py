"""Handing out the windows of a pass strip by strip: each strip's windows while the next one
decodes, the first window alone and first of all."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def handed_out(
    strips: Iterable[np.ndarray],
    start: Callable[[np.ndarray], Callable[[], list[T]]],
    *,
    before_read: Callable[[], None] = lambda: None,
) -> Iterator[T]:
    """The samples of each strip in turn, ``start(strip)`` returning ``finish()`` (their
    samples, once decoded): each strip's samples are handed out while the next one decodes,
    except the first strip's, handed out before the next one starts, so that a pass hands
    out its first window as soon as that window's frames are decoded. ``before_read()``
    comes right before each ``start``, with no ``yield`` between."""
    handing_out: Callable[[], list[T]] | None = None
    for position, strip in enumerate(strips):
        before_read()
        decoding = start(strip)
        yield from handing_out() if handing_out is not None else ()
        handing_out = decoding
        if position == 0:
            yield from decoding()
            handing_out = None
    yield from handing_out() if handing_out is not None else ()
