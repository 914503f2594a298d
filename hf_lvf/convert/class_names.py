"""Class names from a metadata file: a ``label`` column of names becomes integer labels with
``label_names``, as class folders do, so that readers type it as a ``ClassLabel``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import ParameterError
from .sources import _Source

LABEL = "label"


def encode_named_labels(
    sources: Sequence[_Source], label_names: list[str] | None, known: Sequence[str] | None
) -> tuple[list[_Source], list[str] | None]:
    """``sources`` with a ``label`` of names (every video's a string) as indices into their
    sorted names (``known``, the names of the root appended to, if given), and those names;
    else ``sources`` and ``label_names`` as they are.

    Raises:
        ParameterError: (append) a name is not one of the root's ``label_names``.
    """
    labels = [s.metadata.get(LABEL) for s in sources]
    if not labels or not all(isinstance(label, str) for label in labels):
        return list(sources), label_names
    names = list(known) if known else sorted(set(labels))
    unknown = sorted(set(labels) - set(names))
    if unknown:
        raise ParameterError(
            f"label(s) {', '.join(map(repr, unknown))} of the metadata file are not classes of "
            f"the root appended to (its label_names: {names!r})"
        )
    index = {name: i for i, name in enumerate(names)}
    encoded = [
        replace(s, metadata={**s.metadata, LABEL: index[s.metadata[LABEL]]}) for s in sources
    ]
    return encoded, names


__all__ = ["encode_named_labels"]
