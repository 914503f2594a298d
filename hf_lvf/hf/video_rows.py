"""The rows of a ``datasets`` video dataset, for the converter: each row's video as stored
(``Video(decode=False)``: bytes or a path, never decoded here) and its scalar columns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError


@dataclass(frozen=True)
class VideoRows:
    """What a dataset holds: its video column, the label names of its ``ClassLabel``
    column (``label_column``), and the rows."""

    video_column: str
    label_column: str | None
    label_names: list[str] | None
    rows: Iterator[tuple[bytes | None, str | None, dict[str, Any]]]


def is_video_dataset(value: Any) -> bool:
    """A ``datasets.Dataset`` or ``IterableDataset`` (without importing ``datasets``)."""
    kind = type(value)
    return kind.__module__.startswith("datasets.") and hasattr(value, "features")


def video_rows(dataset: Any) -> VideoRows:
    """Read ``dataset``'s ``Video`` column with ``decode=False`` (bytes or path) and its
    scalar columns; list, image and other nested columns are left out.

    Raises:
        ValueError: the dataset has no ``Video`` column, or several.
    """
    import datasets

    features = dataset.features or {}
    videos = [name for name, kind in features.items() if isinstance(kind, datasets.Video)]
    if len(videos) != 1:
        raise ParameterError(
            f"a dataset to convert needs exactly one Video column, got {videos!r} (columns: "
            f"{list(features)!r}); select one with dataset.select_columns(...)"
        )
    column = videos[0]
    labels = [n for n, k in features.items() if isinstance(k, datasets.ClassLabel)]
    label_column = labels[0] if labels else None
    label_names = list(features[label_column].names) if label_column else None
    scalars = [
        n
        for n, k in features.items()
        if n != column and isinstance(k, (datasets.Value, datasets.ClassLabel))
    ]
    if isinstance(dataset, datasets.IterableDataset) and hasattr(dataset, "decode"):
        # datasets 5 streams decode in a step of their own (threads): turned off, not cast over
        dataset = dataset.decode(False)
    stored = dataset.cast_column(column, datasets.Video(decode=False))

    def rows() -> Iterator[tuple[bytes | None, str | None, dict[str, Any]]]:
        for row in stored:
            video = row[column] or {}
            yield video.get("bytes"), video.get("path"), {n: row[n] for n in scalars}

    return VideoRows(column, label_column, label_names, rows())


def saved_dataset(folder: str) -> Any | None:
    """The dataset ``Dataset.save_to_disk`` wrote to ``folder`` (its first split, for a
    ``DatasetDict``), or ``None`` if ``folder`` is not one."""
    from pathlib import Path

    base = Path(folder)
    if not (base / "dataset_dict.json").is_file() and not (base / "state.json").is_file():
        return None
    import datasets

    loaded = datasets.load_from_disk(folder)
    if isinstance(loaded, datasets.DatasetDict):
        return loaded["train"] if "train" in loaded else next(iter(loaded.values()))
    return loaded


def hub_dataset(repo_id: str, sha: str, data_dir: str | None, token: str | None) -> Any:
    """The ``train`` split (else the first) of a Hub dataset repo at commit ``sha``, streamed
    (``load_dataset(..., streaming=True)``): rows are read as the converter takes them."""
    import datasets

    kwargs = {"revision": sha, "token": token, "streaming": True}
    if data_dir:
        kwargs["data_dir"] = data_dir
    loaded = datasets.load_dataset(repo_id, **kwargs)
    return loaded["train"] if "train" in loaded else next(iter(loaded.values()))
