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
    """Map-style rows of windows ``idx``: what identifies each window, no pixels, as columns."""
    video_idx, start_frame = view.plan.locate(idx)
    frame_indices = view.plan.frame_indices(start_frame).astype(np.int32)
    video_idx32, start32 = video_idx.astype(np.int32), start_frame.astype(np.int32)
    reference = pa.StructArray.from_arrays(
        [pa.array(np.full(len(idx), root, np.int32)), video_idx32, start32],
        names=["root", "video_idx", "start_frame"],
    )
    columns = {
        "video": reference,
        "video_idx": video_idx32,
        "filename": view.layout.table.column("path").take(video_idx),
        "start_frame": start32,
        "frame_indices": pa.FixedSizeListArray.from_arrays(
            frame_indices.reshape(-1), frame_indices.shape[1]
        ),
        "sample_idx": idx,
    }
    fields = view.metadata_fields
    for name, dtype in fields.items():
        columns[name] = view.layout.field_column(name, dtype, video_idx)
    return pa.Table.from_pydict({n: columns[n] for n in schema.names}).cast(schema)
