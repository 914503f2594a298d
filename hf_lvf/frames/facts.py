"""What a root's Lance table says about itself, from its manifest: the version read, its rows,
the bytes of its data files. For descriptions (``hf_lvf.describe``); no frame is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..layout import RootLayout
from . import FrameReader


@dataclass(frozen=True)
class TableFacts:
    """Attributes:
    version: the Lance version opened (the one ``_metadata.json`` names, else the latest).
    num_rows: rows of that version.
    num_fragments: its fragments (Lance data files, one or more each).
    data_bytes: bytes of its data files, as the manifest records them (``None`` if a file
        written by an older Lance has no recorded size).
    """

    version: int
    num_rows: int
    num_fragments: int
    data_bytes: int | None


def table_facts(layout: RootLayout, storage_options: Mapping[str, str] | None = None) -> TableFacts:
    """Open the Lance table of ``layout``'s root as a read would (the same checks) and return
    what its manifest says.

    Raises:
        LayoutError: the table is missing, has another schema, or its row count is not the
            video table's (the checks of the first read).
        HubError, OSError: a remote table could not be read (after the retries of a read).
    """
    dataset = FrameReader(layout, storage_options).dataset
    fragments = dataset.get_fragments()
    sizes = [f.file_size_bytes for fragment in fragments for f in fragment.metadata.files]
    return TableFacts(
        version=int(dataset.version),
        num_rows=int(dataset.count_rows()),
        num_fragments=len(fragments),
        data_bytes=None if not all(sizes) else int(sum(sizes)),  # 0/None: not recorded
    )
