"""Front ends for other engines: a root's windows and conversions on a Ray cluster.

:mod:`.ray_data` (``read_windows``: windows as a ``ray.data.Dataset``; ``frame_table``:
per-frame results as rows to join on ``(video_id, frame_idx)``; ``RayExecutor``: the
``concurrent.futures.Executor`` that ``convert_videos`` runs on a Ray cluster) with its
datasource in :mod:`.ray_source`. Ray is imported only when one of them is called. Built over
:mod:`hf_lvf.read`; it may import that and every layer below it, never ``write`` or above.
"""
