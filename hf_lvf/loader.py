"""``safe_dataloader``: a PyTorch ``DataLoader`` whose workers never inherit a Lance handle.

pylance is not fork-safe, and the default start method on Linux is ``fork``.
Workers started by ``forkserver`` are forked from a clean server process, so
they work whatever the parent did before (read a window, iterated a dataset);
``persistent_workers`` keeps them, and their open Lance handles and decoded
frames, from one epoch to the next.
"""

from __future__ import annotations

from typing import Any


def safe_dataloader(
    dataset: Any,
    *,
    batch_size: int | None = 1,
    num_workers: int = 2,
    multiprocessing_context: str = "forkserver",
    persistent_workers: bool | None = None,
    **kwargs: Any,
) -> Any:
    """A ``torch.utils.data.DataLoader`` over ``dataset`` that is safe with Lance.

    Works with a :class:`~hf_lvf.VideoWindows`, a map-style or streaming dataset
    from ``load_dataset("hf_lvf", ...)``, and ``VideoWindows.to_iterable_dataset()``.

    Args:
        dataset: what to load from.
        batch_size: as for ``DataLoader``.
        num_workers: worker processes; 0 reads in the calling process.
        multiprocessing_context: start method of the workers; ``"forkserver"`` or
            ``"spawn"`` (``"fork"`` is refused: it is what this helper avoids).
        persistent_workers: keep workers across epochs; default ``num_workers > 0``.
        **kwargs: passed on to ``DataLoader`` (``shuffle``, ``collate_fn``, ``timeout``...).

    Returns:
        The ``DataLoader``.

    Raises:
        ImportError: torch is not installed.
        ValueError: ``num_workers`` or ``multiprocessing_context`` is not allowed.

    Example:
        >>> ds = datasets.load_dataset(  # doctest: +SKIP
        ...     "hf_lvf", data_dir="clips/", window_length=16
        ... )
        >>> loader = hf_lvf.safe_dataloader(  # doctest: +SKIP
        ...     ds["train"], batch_size=8, shuffle=True, num_workers=4
        ... )
    """
    try:
        from torch.utils.data import DataLoader
    except ImportError as err:
        raise ImportError(
            "safe_dataloader needs PyTorch: pip install 'hf-lvf[torch]' (or any torch build)"
        ) from err
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"num_workers must be an integer >= 0, got {num_workers!r}")
    if multiprocessing_context not in ("forkserver", "spawn"):
        raise ValueError(
            "multiprocessing_context must be 'forkserver' or 'spawn' (pylance is not fork-safe), "
            f"got {multiprocessing_context!r}"
        )
    if num_workers == 0:
        return DataLoader(dataset, batch_size=batch_size, num_workers=0, **kwargs)
    if persistent_workers is None:
        persistent_workers = True
    return DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        multiprocessing_context=multiprocessing_context,
        persistent_workers=persistent_workers,
        **kwargs,
    )


__all__ = ["safe_dataloader"]
