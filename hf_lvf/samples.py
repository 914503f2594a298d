"""What a sample is: its keys, their ``datasets`` features, and the dicts themselves.

One definition for every front end (the core view, streaming, map-style), so
they agree on keys, order, types and the placeholders of missing metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .layout import VideoInfo, metadata_values

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
    videos: Sequence[VideoInfo],
    fields: Mapping[str, str],
    idx: np.ndarray,
    video_idx: np.ndarray,
    start_frame: np.ndarray,
    frame_indices: np.ndarray,
    video: Sequence[Any],
) -> list[dict[str, Any]]:
    """Sample dicts in FORMAT.md's key order, ``video[b]`` as the ``video`` of sample ``b``.

    A metadata field the video lacks (or holds as ``null``) takes its dtype's
    placeholder (:data:`hf_lvf.layout.MISSING_VALUES`), so samples always collate.
    """
    samples = []
    for b, (v, start, frames) in enumerate(
        zip(video_idx.tolist(), start_frame.tolist(), frame_indices.tolist(), strict=True)
    ):
        info = videos[v]
        sample = {
            "video": video[b],
            "video_idx": v,
            "filename": info.path,
            "start_frame": start,
            "frame_indices": frames,
            "sample_idx": int(idx[b]),
        }
        sample.update(metadata_values(info, fields))
        samples.append(sample)
    return samples


__all__ = ["build_samples", "sample_features"]
