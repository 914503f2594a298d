"""Map-style rows: the references of windows (no pixels) and their scalar columns, as Arrow.

What ``load_dataset("hf_lvf", ...)`` writes into its cache, a whole table of
windows at a time (not one example dict each): ``video`` holds the
:class:`~hf_lvf.WindowVideo` reference ``{root, video_idx, start_frame}``, the
other columns the sample's keys and metadata, typed by the dataset's features.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .windows import VideoWindows


def reference_table(view: VideoWindows, root: int, idx: np.ndarray, schema: pa.Schema) -> pa.Table:
    """Map-style rows of windows ``idx``: what identifies each window, no pixels, as columns.

    A reference's ``start_frame`` is the window's start in the plan's (virtual, with
    ``fps=``) frames, which decoding needs; the row's ``start_frame`` is its first stored
    frame, as in every sample.
    """
    video_idx, start_frame = view.plan.locate(idx)
    frame_indices = view.plan.frame_indices(start_frame, video_idx).astype(np.int32)
    video_idx32 = video_idx.astype(np.int32)
    reference = pa.StructArray.from_arrays(
        [pa.array(np.full(len(idx), root, np.int32)), video_idx32, start_frame.astype(np.int32)],
        names=["root", "video_idx", "start_frame"],
    )
    columns = {
        "video": reference,
        "video_idx": video_idx32,
        "filename": view.layout.table.column("path").take(video_idx),
        "start_frame": frame_indices[:, 0],
        "frame_indices": _rows_of(frame_indices),
        "sample_idx": idx,
    }
    extras = view.plan.sample_columns(video_idx, start_frame)  # frame_is_pad, timestamps
    columns.update({name: _rows_of(np.asarray(values)) for name, values in extras.items()})
    for name, dtype in view.metadata_fields.items():
        columns[name] = view.layout.field_column(name, dtype, video_idx)
    return pa.Table.from_pydict({n: columns[n] for n in schema.names}).cast(schema)


def _rows_of(values: np.ndarray) -> pa.FixedSizeListArray:
    """An ``(n, k)`` array as a column of ``n`` lists of ``k``."""
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
