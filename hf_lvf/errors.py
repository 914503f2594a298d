"""The exceptions hf_lvf raises.

Every class also derives from the builtin a caller would expect, so code that
catches ``ValueError`` or ``FileNotFoundError`` keeps working, and code that
wants to catch only hf_lvf's errors catches :class:`LVFError`.
"""

from __future__ import annotations


class LVFError(Exception):
    """Base class of every error raised by hf_lvf."""


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


class HubError(LVFError, OSError):
    """A Hugging Face Hub operation failed (missing repo, revision or path, no access)."""


class StoreError(LVFError, OSError):
    """An object store (``s3://``, ``gs://``, ``az://``) refused or failed an operation: wrong
    credentials, a missing bucket, or a store that stays unreachable; names the bucket and key."""


class VideoDecodeError(LVFError, ValueError):
    """A source video file cannot be converted: corrupt, truncated, empty or without video."""


class SkippedVideoWarning(UserWarning):
    """A source video file was skipped by a conversion (``on_error="skip"``); names it and why."""


__all__ = [
    "FrameDecodeError",
    "ForkSafetyError",
    "HubError",
    "LVFError",
    "LayoutError",
    "RootNotFoundError",
    "SkippedVideoWarning",
    "StoreError",
    "VideoDecodeError",
]
