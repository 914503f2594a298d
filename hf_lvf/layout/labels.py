"""The class names of a root's ``label`` field: its ``label_names``, where they fit the labels.

``label_names`` (a top-level field of ``_metadata.json``, written by a conversion from class
folders or from a metadata file's names) names label ``i`` ``label_names[i]``. Front ends
type ``label`` with them (a ``datasets.ClassLabel``) when every video's label is an integer
in range (or missing); otherwise ``label`` stays a plain integer field.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Mapping

from .table import RootLayout

logger = logging.getLogger(__name__)

LABEL = "label"
_checked: weakref.WeakKeyDictionary[RootLayout, list[str] | None] = weakref.WeakKeyDictionary()


def label_names(layout: RootLayout, fields: Mapping[str, str] | None = None) -> list[str] | None:
    """``layout``'s ``label_names`` if they name every ``label`` it holds (and ``fields``, the
    fields samples carry, has ``label``), else ``None``."""
    if fields is not None and LABEL not in fields:
        return None
    if layout not in _checked:  # once per layout: a pass over the labels
        _checked[layout] = _checked_names(layout)
    names = _checked[layout]
    return None if names is None else list(names)


def _checked_names(layout: RootLayout) -> list[str] | None:
    names = layout.header.get("label_names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    if layout.fields.get(LABEL) != "int64" or len(set(names)) != len(names):
        return None
    values = layout.field_values(LABEL)
    if values.size and (values.min() < -1 or values.max() >= len(names)):
        logger.warning(
            "%s: label_names has %d names but a label is %d: label stays an integer",
            layout.metadata_path,
            len(names),
            int(values.max() if values.max() >= len(names) else values.min()),
        )
        return None
    return list(names)


def combined_label_names(layouts: Iterable[RootLayout]) -> list[str] | None:
    """The ``label_names`` every root with a ``label`` shares, else ``None``."""
    found = [label_names(layout) for layout in layouts if LABEL in layout.fields]
    if not found or any(names is None or names != found[0] for names in found):
        return None
    return found[0]


__all__ = ["combined_label_names", "label_names"]
