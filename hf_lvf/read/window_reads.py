"""How a :class:`~hf_lvf.read.windows.VideoWindows` reads windows: their rows, one dense read
or a shared strip, and the per-frame fields that come with them (in the same take)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import LayoutError, ParameterError
from ..frames import check_fork_safe
from ..plan import batch_bytes_problem
from .field_plan import FieldPlan
from .field_rows import NO_FIELDS, RowFields

if TYPE_CHECKING:
    import datasets

    from ..layout.frame_fields import FrameField


class WindowReads:
    """The reads of a view (its attributes are set by ``VideoWindows._setup``)."""

    _field_plan: FieldPlan

    @property
    def frame_fields(self) -> dict[str, FrameField]:
        """The per-frame fields samples carry, by name (the root's Lance schema says them:
        read by a child process unless this one has used lance, see
        :mod:`hf_lvf.frames.probe`)."""
        from ..frames.field_reads import select_fields
        from ..frames.probe import probe_schema
        from ..layout.frame_fields import frame_fields

        reader = self._frames.reader
        if reader._ds is not None:  # opened here: it knows
            return {f.name: f for f in reader.fields}
        schema = probe_schema(self._layout, self._storage_options)
        found = frame_fields(schema, where=self.uri)
        spec = self._field_plan.spec
        select_fields(found, spec.offset_keys, self.uri)
        return {f.name: f for f in select_fields(found, spec.read, self.uri)}

    @property
    def base_features(self) -> datasets.Features:
        """:attr:`features` less the per-frame fields (known without the Lance schema)."""
        from .segments import window_features

        return window_features(self._params, self._out_size, self._fields, self._layout)

    def _field_features(self, features: datasets.Features) -> datasets.Features:
        """``features`` with those of the per-frame fields (none read: unchanged)."""
        from .samples import field_features

        spec = self._field_plan.spec
        if spec.selection == () and not spec.offset_keys:
            return features
        found = self.frame_fields
        self._check_names(tuple(found.values()))
        extra = field_features(found.values(), self._params.window_length, self._field_plan.offsets)
        return type(features)({**features, **extra})

    def _with_fields(
        self,
        samples: list[dict[str, Any]],
        video_idx: np.ndarray,
        frame_indices: np.ndarray,
        values: RowFields,
    ) -> list[dict[str, Any]]:
        if not values.values:
            return samples
        fields = self._frames.reader.fields
        if self.__dict__.get("_checked_fields") is not fields:
            self._check_names(fields)
            self._checked_fields = fields
        columns = self._field_plan.columns(fields, video_idx, frame_indices, values)
        for b, sample in enumerate(samples):
            for name, column in columns.items():
                sample[name] = column[b]
        return samples

    def _check_names(self, fields: tuple[FrameField, ...]) -> None:
        """Refuse a per-frame field named as a key the sample has already (``video``, a
        metadata field, ``frame_is_pad``, another field's ``_is_pad``...)."""
        from ..layout import SAMPLE_KEYS
        from ..plan import IS_PAD
        from .samples import EXTRA_KEYS

        taken = {*SAMPLE_KEYS, *EXTRA_KEYS, *self._fields}
        taken |= {name + IS_PAD for name in self._field_plan.offsets}
        clash = [f.name for f in fields if f.name in taken]
        if clash:
            raise LayoutError(
                f"root {self.uri!r} has a per-frame field {clash[0]!r}, the name of a key its "
                "samples have already (a sample key, a metadata field or a field's _is_pad); "
                "rename the column, or leave it out with frame_fields="
            )

    def _rows_to_fetch(self, strips: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """The rows to fetch ahead for each strip: ``WindowPlan.rows_to_fetch``, and the rows
        the strip's offsets reach (so that no strip needs a second take for its fields)."""
        if not self._field_plan.offsets:
            yield from self._plan.rows_to_fetch(self._start_rows, strips)
            return
        previous = np.empty(0, np.int64)
        for idx in strips:
            video_idx, _, frame_indices, rows = self._rows(idx)
            extra = self._field_plan.extra_rows(video_idx, frame_indices)
            yield np.setdiff1d(np.union1d(rows, extra), previous)
            previous = rows[-1]

    def _rows(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(video_idx, start_frame, frame_indices, Lance rows)`` of windows ``idx``."""
        video_idx, start_frame = self._plan.locate(idx)
        frame_indices = self._plan.frame_indices(start_frame, video_idx)
        rows = self._start_rows[video_idx][:, None] + frame_indices
        return video_idx, start_frame, frame_indices, rows

    def _read(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Windows ``idx`` as one dense, writable ``(n, window_length, H, W, 3)`` array."""
        return self._read_fields(idx, fields=False)[:4]  # pixels only: no field column read

    def _read_fields(self, idx: np.ndarray, fields: bool = True) -> tuple[Any, ...]:
        """:meth:`_read` and the field values of the windows' rows (and offsets)."""
        # Before the frame cache: a forked child must fail on every read, not only on a miss.
        check_fork_safe(self.uri)
        video_idx, start_frame, frame_indices, rows = self._rows(idx)
        if idx.size == 0:
            return self._no_windows(), video_idx, start_frame, frame_indices, NO_FIELDS
        height, width = self._out_size
        problem = batch_bytes_problem(rows.size, height, width, self._sizing.batch_bytes)
        if problem is not None:
            raise ParameterError(
                f"reading {idx.size} windows of root {self.uri!r} at once: {problem}"
            )
        extra = self._field_plan.extra_rows(video_idx, frame_indices) if fields else None
        video, values = self._frames.dense(rows, extra, fields=fields)
        return video, video_idx, start_frame, frame_indices, values

    def _no_windows(self) -> np.ndarray:
        """The pixels of no window: ``(0, window_length, H, W, 3)`` uint8."""
        return np.empty((0, self._params.window_length, *self._out_size, 3), np.uint8)

    def _take_block(self, indices: Sequence[int] | np.ndarray) -> tuple[np.ndarray, list]:
        """:meth:`take`, and the one ``(n, window_length, H, W, 3)`` array its samples'
        ``video`` values are views of (what the Ray read tasks hand on as a block)."""
        # No dtype= here: casting would truncate 1.5 to 1 instead of refusing it.
        idx = self._plan.normalize(np.asarray(indices).reshape(-1))
        if idx.size == 0:
            return self._no_windows(), []
        with self._ordered.serving(idx, self._fetch_ahead):  # see expect_order
            video, video_idx, start_frame, frame_indices, values = self._read_fields(idx)
        return video, self._samples(
            idx, video_idx, start_frame, frame_indices, video, values=values
        )

    def _take_shared(self, idx: np.ndarray) -> Callable[[], list[dict[str, Any]]]:
        """Start reading windows ``idx`` into one strip of decoded frames; returns ``finish()``:
        their samples, each a read-only view into the strip."""
        check_fork_safe(self.uri)
        video_idx, start_frame, frame_indices, rows = self._rows(idx)
        extra = self._field_plan.extra_rows(video_idx, frame_indices)
        finish = self._frames.start_shared_fields(rows, extra)

        def samples() -> list[dict[str, Any]]:
            video, values = finish()
            columns = (idx, video_idx, start_frame, frame_indices, video)
            return self._samples(*columns, values=values)

        return samples

    # attributes VideoWindows sets
    _frames: Any
    _fields: Any
    _layout: Any
    _storage_options: Any
    _params: Any
    _plan: Any
    _start_rows: Any
    _out_size: Any
    _sizing: Any
    uri: Any
    _samples: Any
    _ordered: Any
    _fetch_ahead: Any


__all__ = ["WindowReads"]
