"""What a sample is: its keys, their ``datasets`` features, and the dicts themselves.

One definition for every front end (the core view, streaming, map-style), so
they agree on keys, order, types and the placeholders of missing metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import LayoutError
from ..layout import RootLayout

if TYPE_CHECKING:
    import datasets


def sample_features(
    window_length: int,
    frame_size: tuple[int, int],
    fields: Mapping[str, str],
    extras: Sequence[str] = (),
) -> datasets.Features:
    """The ``datasets.Features`` of a sample: ``video`` an ``Array4D``, then the scalar keys,
    then the ``extras`` (:func:`extra_keys`), then the metadata ``fields``, typed so that
    their placeholders fit."""
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
    features.update(extra_features(window_length, extras))
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
    extras: Mapping[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """Sample dicts in FORMAT.md's key order, ``video[b]`` as the ``video`` of sample ``b``.

    ``frame_indices`` is row ``b`` of an int32 ``(n, window_length)`` array, so a plain
    ``torch.utils.data.DataLoader`` collates it to one ``(B, window_length)`` tensor.

    The per-video values come from ``layout``'s columns, taken for the whole batch at once.
    A metadata field the video lacks (or holds as ``null``) takes its dtype's
    placeholder (:data:`hf_lvf.layout.MISSING_VALUES`), so samples always collate.
    ``extras`` (``frame_is_pad``, ``timestamps``: ``(n, window_length)`` arrays) come
    after ``sample_idx``, row ``b`` for sample ``b``.
    """
    columns = {
        "video": video,
        "video_idx": video_idx.tolist(),
        "filename": layout.paths_of(video_idx),
        "start_frame": start_frame.tolist(),
        "frame_indices": frame_indices.astype(np.int32),
        "sample_idx": idx.tolist(),
        **(extras or {}),
        **layout.metadata_columns(fields, video_idx),
    }
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


# --- keys of windows counted in virtual frames (short_videos="pad", fps=): hf_lvf.plan ---

#: The keys a sample gains, by the option that adds it.
EXTRA_KEYS = {"frame_is_pad": "short_videos='pad'", "timestamps": "fps="}


def extra_keys(short_videos: str, fps: float | None, fields: Mapping[str, str]) -> tuple[str, ...]:
    """The keys samples gain with these options: ``frame_is_pad`` (a ``window_length`` bool
    array, with ``short_videos="pad"``), ``timestamps`` (float64 seconds, with ``fps``).

    Raises:
        LayoutError: a metadata field of the root has the name of one of them.
    """
    keys = (("frame_is_pad",) if short_videos == "pad" else ()) + (
        ("timestamps",) if fps is not None else ()
    )
    clash = [key for key in keys if key in fields]
    if clash:
        raise LayoutError(
            f"the videos have a metadata field {clash[0]!r}, the name of the sample key "
            f"{EXTRA_KEYS[clash[0]]} adds; rename the field or leave the option unset"
        )
    return keys


def extra_features(window_length: int, keys: Sequence[str]) -> dict[str, Any]:
    """The ``datasets`` features of :func:`extra_keys`."""
    import datasets

    dtypes = {"frame_is_pad": "bool", "timestamps": "float64"}
    return {key: datasets.List(datasets.Value(dtypes[key]), length=window_length) for key in keys}


def field_features(
    fields: Iterable[Any], window_length: int, offsets: Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """The ``datasets`` features of per-frame fields (:class:`~hf_lvf.layout.frame_fields.
    FrameField`): ``(n, *shape)`` values, ``n`` the window's frames or the field's offsets
    (then with a ``<name>_is_pad`` bool list): a ``List`` of ``Value`` for scalars and
    strings, ``Array2D``/``Array3D``/``Array4D`` for shaped fields."""
    import datasets

    arrays = {2: datasets.Array2D, 3: datasets.Array3D, 4: datasets.Array4D, 5: datasets.Array5D}
    out: dict[str, Any] = {}
    for field in fields:
        n = offsets[field.name].shape[1] if field.name in offsets else window_length
        if not field.shape:
            out[field.name] = datasets.List(datasets.Value(field.dtype), length=n)
        else:
            out[field.name] = arrays[1 + len(field.shape)]((n, *field.shape), field.dtype)
        if field.name in offsets:
            out[field.name + "_is_pad"] = datasets.List(datasets.Value("bool"), length=n)
    return out


__all__ = [
    "EXTRA_KEYS",
    "field_features",
    "build_samples",
    "extra_features",
    "extra_keys",
    "sample_features",
]
