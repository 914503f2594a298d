"""The exceptions hf_lvf raises.

Every class also derives from the builtin a caller would expect, so code that
catches ``ValueError`` or ``FileNotFoundError`` keeps working, and code that
wants to catch only hf_lvf's errors catches :class:`LVFError`.
"""

from __future__ import annotations


class LVFError(Exception):
    """Base class of every error raised by hf_lvf."""


class ParameterError(LVFError, ValueError):
    """An argument's value is not allowed (a window length, a frame size, a mode, a split
    name...), or the data gives nothing under it (no video long enough for one window)."""


class ParameterTypeError(LVFError, TypeError):
    """An argument is of a type that is not allowed (a float where an int is needed...)."""


class WindowIndexError(LVFError, IndexError):
    """A window or video index is out of range."""


class RootExistsError(LVFError, FileExistsError):
    """The root (or file) to create exists, and neither overwriting nor appending was asked."""


class InputNotFoundError(LVFError, FileNotFoundError):
    """An input to convert or merge does not exist, or a pattern or folder holds no video."""


class RootBusyError(LVFError, BlockingIOError):
    """Another process is writing the root."""


class UsageError(LVFError, RuntimeError):
    """hf_lvf is used where it cannot work: worker processes asked for where each would run
    the main script's code again (no ``if __name__ == "__main__":`` guard), a feature that
    does not decode asked to decode."""


class MissingDependencyError(LVFError, ImportError):
    """An optional dependency (PyAV, torch) is needed and not installed; says what to install."""


class RootNotFoundError(LVFError, FileNotFoundError):
    """The path is not a lance-video-frames root: it has no ``_metadata.json``."""


class LayoutError(LVFError, ValueError):
    """A root does not follow the lance-video-frames layout (bad metadata or Lance table)."""


class FrameDecodeError(LVFError, ValueError):
    """A stored frame is not a valid WebP, JPEG or PNG image of the size its video declares."""


class ForkSafetyError(LVFError, RuntimeError):
    """Lance was used in a parent process and the current process is a fork of it."""


#: The end of a :class:`ForkSafetyError`'s message: every way out.
FORK_WAYS_OUT = (
    "Start worker processes with the 'spawn' or 'forkserver' method instead of 'fork': for a "
    "DataLoader, hf_lvf.safe_dataloader(...) or DataLoader(..., multiprocessing_context="
    "'forkserver'); for Dataset.map/filter(num_proc=...), which hf_lvf starts with "
    "'forkserver' itself once imported, `import hf_lvf` before the call; for your own pools, "
    "multiprocessing.get_context('forkserver') (multiprocess.get_context for dill), or "
    "set_start_method('forkserver', force=True) once at the start of the script. Or start the "
    "forked processes before this process first opens a root"
)


class WorkerLoadError(LVFError, RuntimeError):
    """What a worker process was sent (a dataset, a function of the main script) could not be
    loaded there; carries the worker's own exception and traceback."""


class HubError(LVFError, OSError):
    """A Hugging Face Hub operation failed (missing repo, revision or path, no access)."""


class StoreError(LVFError, OSError):
    """An object store (``s3://``, ``gs://``, ``az://``) refused or failed an operation: wrong
    credentials, a missing bucket, or a store that stays unreachable; names the bucket and key."""


class VideoDecodeError(LVFError, ValueError):
    """A source video file cannot be converted: corrupt, truncated, empty or without video."""


class SkippedVideoWarning(UserWarning):
    """A source video file was skipped by a conversion (``on_error="skip"``); names it and why."""


class DroppedVideosWarning(UserWarning):
    """Some videos are shorter than one window and give none; says how many, and why."""


__all__ = [
    "DroppedVideosWarning",
    "FrameDecodeError",
    "ForkSafetyError",
    "HubError",
    "InputNotFoundError",
    "LVFError",
    "LayoutError",
    "UsageError",
    "MissingDependencyError",
    "ParameterError",
    "ParameterTypeError",
    "RootBusyError",
    "RootExistsError",
    "RootNotFoundError",
    "SkippedVideoWarning",
    "StoreError",
    "VideoDecodeError",
    "WindowIndexError",
    "WorkerLoadError",
]
