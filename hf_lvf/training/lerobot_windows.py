"""A converted LeRobot root in LeRobot's own conventions: :class:`LeRobotWindows`.

``convert_videos`` of a LeRobot v3 dataset writes one root: the first camera in ``bytes``
(named by ``video_column``), every other camera an image stream, the per-frame parquet
columns as per-frame fields, and what ``LeRobotDataset.meta`` holds (``fps``, ``features``,
``stats``) under ``lerobot`` in ``_metadata.json``. :class:`~hf_lvf.VideoWindows` reads it
with hf_lvf's sample (``video`` and every stream uint8 ``(T, H, W, 3)``, numpy, and the
window's own keys). This view reads the same frames and hands out LeRobotDataset's sample
instead, so that a training loop written for LeRobotDataset runs on it unchanged:

- every camera under its key, float32 in [0, 1], channels first: ``(C, H, W)``, or
  ``(K, C, H, W)`` for a camera named in ``delta_timestamps``;
- every per-frame field of ``meta.features`` as a tensor of the frame (``timestamp``,
  ``index``... 0-dimensional; ``observation.state`` ``(D,)``), or ``(K, ...)`` at the
  offsets of ``delta_timestamps``, with ``<key>_is_pad`` (bool ``(K,)``);
- ``task``, the frame's task string;

and nothing else (no ``video``, ``filename``, ``frame_indices``...). One sample per frame,
numbered as LeRobot numbers them (episode by episode, the root's ``index``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import LayoutError, ParameterError
from ..layout.image_streams import main_camera
from ..read.windows import VideoWindows

# VideoWindows options that set which frames make a sample: LeRobot's sample is one frame.
_SAMPLING = (
    "window_length",
    "frame_skip",
    "hop_size",
    "min_video_frames",
    "short_videos",
    "fps",
    "windows_in",
    "sampling",
    "frame_fields",
    "frame_offsets",
)


@dataclass(frozen=True)
class LeRobotMeta:
    """What a policy reads of ``LeRobotDataset.meta``, from the root.

    Attributes:
        fps: the dataset's frame rate (``info.json``).
        features: ``info.json``'s features that the root holds (a camera not converted,
            ``camera=``, is left out), in its order.
        stats: per field, ``mean``, ``std``, ``min``, ``max`` and ``count`` as numpy arrays
            (per element, over every frame; computed at conversion), as LeRobot's
            ``meta.stats``; each camera, LeRobot's own (``(3, 1, 1)`` per channel, of pixels
            in [0, 1], from the source's ``meta/stats.json``) where the source has them.
        total_frames: frames of the root (samples of the view).
        total_episodes: episodes (the root's videos).
        task_indices: each task string's ``task_index`` (``meta/tasks.parquet``'s; empty for
            a root converted before hf_lvf kept them). :attr:`tasks` is LeRobot's table of it.
    """

    fps: float
    features: dict[str, dict[str, Any]]
    stats: dict[str, dict[str, np.ndarray]] = field(repr=False)
    total_frames: int
    total_episodes: int
    task_indices: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def tasks(self) -> Any:
        """The tasks as LeRobot's ``meta.tasks``: a pandas ``DataFrame`` indexed by the task
        strings, with their ``task_index`` (pandas is imported here, not before)."""
        import pandas as pd

        return pd.DataFrame(
            {"task_index": list(self.task_indices.values())},
            index=pd.Index(list(self.task_indices), name="task"),
        )

    @property
    def total_tasks(self) -> int:
        return len(self.task_indices)

    def get_task_index(self, task: str) -> int | None:
        """The ``task_index`` of ``task``, ``None`` if the dataset has no such task."""
        return self.task_indices.get(task)

    @property
    def camera_keys(self) -> list[str]:
        """The cameras (video features), in ``features``' order."""
        return [k for k, v in self.features.items() if v.get("dtype") in ("video", "image")]

    @property
    def video_keys(self) -> list[str]:
        return [k for k, v in self.features.items() if v.get("dtype") == "video"]

    @property
    def image_keys(self) -> list[str]:
        return [k for k, v in self.features.items() if v.get("dtype") == "image"]

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v.get("shape") or ()) for k, v in self.features.items()}

    @property
    def names(self) -> dict[str, Any]:
        return {k: v.get("names") for k, v in self.features.items()}


def _meta(view: VideoWindows) -> tuple[LeRobotMeta, str]:
    """The root's :class:`LeRobotMeta`, and its main camera (the key of ``bytes``)."""
    layout = view.layout
    kept = layout.header.get("lerobot")
    main = main_camera(layout.header)
    if not isinstance(kept, Mapping) or main is None:
        raise LayoutError(
            f"{layout.metadata_path}: not a root converted from a LeRobot dataset (no 'lerobot' "
            "meta or no camera in video_column): convert it with hf_lvf.convert.convert_videos, "
            "or read it with hf_lvf.VideoWindows"
        )
    cameras = {main, *view.streams, *view.streams_at_offsets}
    features = {
        name: dict(value)
        for name, value in (kept.get("features") or {}).items()
        if value.get("dtype") not in ("video", "image") or name in cameras
    }
    stats = {
        name: {stat: np.asarray(values) for stat, values in each.items()}
        for name, each in (kept.get("stats") or {}).items()
        if name in features
    }
    meta = LeRobotMeta(
        fps=float(kept["fps"]),
        features=features,
        stats=stats,
        total_frames=int(layout.num_frames.sum()),
        total_episodes=len(layout),
        task_indices={str(task): int(index) for index, task in kept.get("tasks") or ()},
    )
    return meta, main


class LeRobotWindows(VideoWindows):
    """A LeRobot root, read as ``LeRobotDataset(..., delta_timestamps=...)`` reads it.

    The samples are LeRobotDataset's (this module's docstring says them), the frames those
    of :class:`~hf_lvf.VideoWindows` ``(root, sampling="every_frame",
    delta_timestamps=...)``: the same Lance reads, decode threads and read-ahead, so
    :func:`~hf_lvf.safe_dataloader` (``shuffle=True`` reads ahead of its order) and
    :class:`~hf_lvf.ClipSampler` work as with any view.

    Args:
        uri: a root written by ``convert_videos`` from a LeRobot v3 dataset.
        delta_timestamps: as LeRobotDataset's: per key (a camera, ``observation.state``,
            ``action``...) the offsets in seconds from the frame, on the frame grid.
        tolerance_s: how far off the grid an offset may be (LeRobot's ``tolerance_s``).
        image_transforms: called on each camera's float tensor, as LeRobotDataset's.
        **options: passed on to :class:`~hf_lvf.VideoWindows` (``streams=``,
            ``frame_size=``, ``decode_threads=``, ``storage_options=``, ``revision=``,
            ``token=``, ``read_ahead=``...); not those that choose the frames of a sample
            (``window_length``, ``sampling``...): a sample is one frame.

    Attributes:
        meta: :class:`LeRobotMeta`: ``fps``, ``features``, ``stats``, ``camera_keys``...

    Raises:
        LayoutError: the root is not a LeRobot conversion.
        ParameterError: an option that sets the frames of a sample.
        ImportError: torch is not installed (at the first sample).

    Examples:
        >>> ds = LeRobotWindows("aloha_root", delta_timestamps={  # doctest: +SKIP
        ...     "observation.images.top": [-0.1, 0.0], "action": [0.0, 0.1, 0.2]})
        >>> ds[0]["observation.images.top"].shape, ds.meta.fps      # doctest: +SKIP
        (torch.Size([2, 3, 480, 640]), 50.0)
    """

    def __init__(
        self,
        uri: str | Any,
        *,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        tolerance_s: float = 1e-4,
        image_transforms: Callable[[Any], Any] | None = None,
        **options: Any,
    ):
        taken = [name for name in _SAMPLING if name in options]
        if taken:
            raise ParameterError(
                f"LeRobotWindows reads one frame a sample, as LeRobotDataset: {taken[0]}= is "
                "not one of its options (use hf_lvf.VideoWindows for windows)"
            )
        super().__init__(
            uri,
            sampling="every_frame",
            delta_timestamps=delta_timestamps,
            tolerance_s=tolerance_s,
            **options,
        )
        self._lerobot = (dict(delta_timestamps or {}), image_transforms)
        self.meta, self._main = _meta(self)

    def __getstate__(self) -> dict[str, Any]:
        return super().__getstate__() | {"lerobot": self._lerobot}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._lerobot = state["lerobot"]
        self.meta, self._main = _meta(self)

    @property
    def fps(self) -> float:
        return self.meta.fps

    @property
    def num_frames(self) -> int:
        return self.meta.total_frames

    @property
    def num_episodes(self) -> int:
        return self.meta.total_episodes

    @property
    def delta_timestamps(self) -> dict[str, list[float]]:
        return {key: list(value) for key, value in self._lerobot[0].items()}

    def take(self, indices: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """The samples of ``indices`` (LeRobot's), read as :meth:`VideoWindows.take` reads."""
        return [self._as_lerobot(sample) for sample in super().take(indices)]

    __getitems__ = take

    def iter_samples(
        self, indices: Sequence[int] | np.ndarray | None = None, *, batch_size: int = 8
    ) -> Iterator[dict[str, Any]]:
        """The samples of ``indices`` (default: all), read as
        :meth:`VideoWindows.iter_samples` reads them."""
        for sample in super().iter_samples(indices, batch_size=batch_size):
            yield self._as_lerobot(sample)

    def _as_lerobot(self, sample: dict[str, Any]) -> dict[str, Any]:
        """hf_lvf's sample of one frame as LeRobotDataset's."""
        import torch

        deltas, transform = self._lerobot
        out: dict[str, Any] = {}
        for camera in self.meta.camera_keys:
            images = sample["video"] if camera == self._main and camera not in deltas else None
            images = sample[camera] if images is None else images
            # (K, H, W, 3) uint8 -> (K, 3, H, W) float32 in [0, 1], as LeRobot's decoders
            pixels = torch.from_numpy(np.transpose(images, (0, 3, 1, 2)).astype(np.float32))
            pixels.div_(255)
            if camera not in deltas:
                pixels = pixels[0]
            out[camera] = pixels if transform is None else transform(pixels)
        for name in self.meta.features:
            if name in out or name not in sample:
                continue
            value = np.asarray(sample[name])
            # a copy (a tensor of its own, writable); the frame's value is 0-d or (D,)
            out[name] = torch.from_numpy(np.array(value if name in deltas else value[0]))
        for name in deltas:
            out[name + "_is_pad"] = torch.from_numpy(np.array(sample[name + "_is_pad"]))
        task = sample.get("task")
        if isinstance(task, list) and task:
            out["task"] = task[-1]
        return out


__all__ = ["LeRobotMeta", "LeRobotWindows"]
