"""What a sample is: its keys, their ``datasets`` features, and the dicts themselves.

One definition for every front end (the core view, streaming, map-style), so
they agree on keys, order, types and the placeholders of missing metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .layout import RootLayout

if TYPE_CHECKING:
    import datasets


def sample_features(
    window_length: int, frame_size: tuple[int, int], fields: Mapping[str, str]
) -> datasets.Features:
    """The ``datasets.Features`` of a sample: ``video`` an ``Array4D``, then the scalar keys,
    then the metadata ``fields``, typed so that their placeholders fit."""
    import datasets

    height, width = frame_size
    features = {
        "video": datasets.Array4D((window_length, height, width, 3), "uint8"),
        "video_idx": datasets.Value("int32"),
        "filename": datasets.Value("string"),
        "start_frame": datasets.Value("int32"),
        "frame_indices": datasets.List(datasets.Value("int32"), length=window_length),
        "sample_idx": datasets.Value("int64"),
    }
    features.update({name: datasets.Value(dtype) for name, dtype in fields.items()})
    return datasets.Features(features)


def build_samples(
    layout: RootLayout,
    fields: Mapping[str, str],
    idx: np.ndarray,
    video_idx: np.ndarray,
    start_frame: np.ndarray,
    frame_indices: np.ndarray,
    video: Sequence[Any],
) -> list[dict[str, Any]]:
    """Sample dicts in FORMAT.md's key order, ``video[b]`` as the ``video`` of sample ``b``.

    The per-video values come from ``layout``'s columns, taken for the whole batch at once.
    A metadata field the video lacks (or holds as ``null``) takes its dtype's
    placeholder (:data:`hf_lvf.layout.MISSING_VALUES`), so samples always collate.
    """
    columns = {
        "video": video,
        "video_idx": video_idx.tolist(),
        "filename": layout.paths_of(video_idx),
        "start_frame": start_frame.tolist(),
        "frame_indices": frame_indices.tolist(),
        "sample_idx": idx.tolist(),
        **layout.metadata_columns(fields, video_idx),
    }
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


__all__ = ["build_samples", "sample_features"]
