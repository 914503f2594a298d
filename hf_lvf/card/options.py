"""What a card says beyond what the roots hold: options, the roots it describes, file names."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import ParameterError
from ..layout import RootLayout
from ..plan import WindowParams, check_frame_size, plan_windows

logger = logging.getLogger(__name__)


TEMPLATE_NAME = "dataset_card.md"


CARD_FILENAME = "README.md"


PREVIEW_STEM = "hf_lvf_preview"


USER_SECTIONS = ("description", "license", "citation")


# Tags every card carries; the Hub lists the dataset under them.
REQUIRED_TAGS = ("lance", "video", "hf_lvf", "lance-video-frames")


DEFAULT_WINDOW_LENGTH = 16


# Metadata key under which a card records the options it was made with.
_OPTIONS_KEY = "hf_lvf"


_STORED_OPTIONS = (
    "window_length",
    "frame_skip",
    "hop_size",
    "min_video_frames",
    "fps",
    "frame_size",
    "label_field",
)


_USER_DEFAULTS = {
    "description": (
        "<!-- Describe the dataset here: where the videos come from, how they were selected and "
        "labelled, and what they are for. This text is kept when the card is regenerated. -->"
    ),
    "license": (
        "<!-- State the license and any terms of use of the videos (the `license` field of the "
        "metadata above is the machine-readable identifier). -->"
    ),
    "citation": "<!-- A BibTeX entry for the dataset, if there is one. -->",
}


_USER_BLOCK_RE = re.compile(
    r"<!-- hf_lvf:user:begin (?P<name>[\w-]+) -->\r?\n?(?P<body>.*?)\r?\n?"
    r"<!-- hf_lvf:user:end (?P=name) -->",
    re.DOTALL,
)


@dataclass(frozen=True, kw_only=True)
class CardOptions:
    """What a card says beyond what the roots hold.

    Args:
        repo_id: the dataset repo the card is for (``"org/name"``); ``None`` writes a
            placeholder in the load code.
        revision: branch, tag or commit the load code pins; ``None`` shows ``"main"``.
        window_length, frame_skip, hop_size, min_video_frames: the window parameters the
            load code uses and the sample counts are computed with. ``hop_size=None`` means
            ``window_length`` (windows that do not overlap).
        fps: the frame rate the load code counts frames at (``fps=`` of ``VideoWindows``);
            the card states it, and counts windows with it.
        frame_size: ``(H, W)`` for the load code; needed when videos differ in size (default:
            the most common size then).
        pretty_name: the card's title; default from the repo or folder name.
        license: a Hub license identifier (``"cc-by-4.0"``, ``"other"``...); default: the
            existing card's, else ``"unknown"``.
        task_categories: Hub task categories; default: the existing card's, else
            ``["video-classification"]`` when the videos carry ``label_field``, else ``["other"]``.
        tags: extra tags, added to ``lance``, ``video``, ``hf_lvf`` and ``lance-video-frames``.
        label_field: the per-video field whose value counts the card tabulates.
    """

    repo_id: str | None = None
    revision: str | None = None
    window_length: int = DEFAULT_WINDOW_LENGTH
    frame_skip: int = 0
    hop_size: int | None = None
    min_video_frames: int | None = None
    fps: float | None = None
    frame_size: tuple[int, int] | None = None
    pretty_name: str | None = None
    license: str | None = None
    task_categories: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()
    label_field: str = "label"

    def __post_init__(self) -> None:
        if self.repo_id is not None and (
            not isinstance(self.repo_id, str)
            or self.repo_id.count("/") != 1
            or "" in self.repo_id.split("/")
        ):
            raise ParameterError(f"repo_id must be 'namespace/name', got {self.repo_id!r}")
        for name in ("revision", "pretty_name", "license"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ParameterError(f"{name} must be a non-empty string or None, got {value!r}")
        hop_size = self.window_length if self.hop_size is None else self.hop_size
        # WindowParams validates the numbers and names the bad one.
        params = WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=hop_size,
            min_video_frames=self.min_video_frames,
            fps=self.fps,
        )
        object.__setattr__(self, "hop_size", hop_size)
        object.__setattr__(self, "fps", params.fps)
        if self.frame_size is not None:
            object.__setattr__(self, "frame_size", check_frame_size(self.frame_size))
        for name in ("task_categories", "tags"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                value = (value,)
            value = tuple(value)
            if not all(isinstance(v, str) and v.strip() for v in value):
                raise ParameterError(f"{name} must be a list of non-empty strings, got {value!r}")
            object.__setattr__(self, name, value)
        if not isinstance(self.label_field, str) or not self.label_field:
            raise ParameterError(
                f"label_field must be a non-empty string, got {self.label_field!r}"
            )

    @property
    def params(self) -> WindowParams:
        return WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=self.hop_size,  # type: ignore[arg-type]  # set in __post_init__
            min_video_frames=self.min_video_frames,
            fps=self.fps,
        )


class CardFiles(NamedTuple):
    """What :func:`write_card` wrote."""

    card: Path
    preview: Path | None


@dataclass(frozen=True)
class CardRoot:
    """One root a card describes.

    Attributes:
        layout: its validated ``_metadata.json``.
        path_in_repo: the folder it sits in, in the repo (``""`` for the repo's top).
        split: the split of its videos that carry no ``split`` field.
        preview: path of its preview picture relative to the card, or ``None``.
        storage_options: for reading its Lance table (per-frame field statistics): a
            pinned ``hf_revision`` and token, or an object store's credentials; never shown.
    """

    layout: RootLayout
    path_in_repo: str = ""
    split: str = "train"
    preview: str | None = None
    storage_options: Mapping[str, str] | None = field(default=None, compare=False, repr=False)
    _stats: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def card_options(
    overrides: Mapping[str, Any] | None = None,
    existing_data: Mapping[str, Any] | None = None,
    *,
    roots: Sequence[CardRoot] = (),
) -> CardOptions:
    """:class:`CardOptions` from explicit values, else those an existing card recorded.

    ``existing_data`` is the card's metadata (``card.data.to_dict()``); hf_lvf records the
    window parameters under its ``hf_lvf`` key, so a regenerated card keeps them. Given the
    ``roots``, a ``window_length`` that is not in ``overrides`` fits them: the recorded one
    if some video is long enough for it, else :func:`fit_window_length`.
    """
    stored = (existing_data or {}).get(_OPTIONS_KEY)
    values: dict[str, Any] = {}
    if isinstance(stored, Mapping):
        for name in _STORED_OPTIONS:
            if stored.get(name) is not None:
                values[name] = stored[name]
    if isinstance(values.get("frame_size"), list):
        values["frame_size"] = tuple(values["frame_size"])
    asked = {k: v for k, v in (overrides or {}).items() if v is not None}
    values.update(asked)
    options = CardOptions(**values)
    if not roots or "window_length" in asked:
        return options
    num_frames = np.concatenate([r.layout.num_frames for r in roots])
    video_fps = np.concatenate([r.layout.video_fps for r in roots]) if options.fps else None
    if "window_length" in values and len(
        plan_windows(num_frames, options.params, video_fps=video_fps)
    ):
        return options
    fitted = fit_window_length(num_frames, options.frame_skip, options.min_video_frames)
    if "window_length" in values:
        logger.info(
            "no video is long enough for the recorded window_length=%s; the card uses %s",
            values["window_length"],
            fitted,
        )
    values["window_length"] = fitted
    if "hop_size" not in asked:
        values.pop("hop_size", None)
    return CardOptions(**values)


def rate_text(fps: float) -> str:
    """A frame rate as the card writes it, in code too: ``10``, ``29.97``, every digit kept."""
    return str(int(fps)) if float(fps).is_integer() else repr(float(fps))


def fit_window_length(
    num_frames: np.ndarray, frame_skip: int = 0, min_video_frames: int | None = None
) -> int:
    """The longest window, up to 16 frames, that at least half of the videos are long enough for.

    Videos shorter than ``min_video_frames`` do not count. With no frame at all, 16.

    Examples:
        >>> fit_window_length(np.array([1, 1, 40])), fit_window_length(np.array([5, 9, 40]))
        (1, 9)
    """
    frames = np.sort(np.asarray(num_frames, dtype=np.int64))[::-1]
    frames = frames[frames >= max(min_video_frames or 0, 1)]
    if not len(frames):
        return DEFAULT_WINDOW_LENGTH
    half = int(frames[(len(frames) + 1) // 2 - 1])
    return max(1, min(DEFAULT_WINDOW_LENGTH, (half - 1) // (frame_skip + 1) + 1))


def clean_path_in_repo(path_in_repo: str | None) -> str:
    """``path_in_repo`` without surrounding slashes (``""`` for the repo's top).

    Raises:
        ValueError: it has empty, ``.`` or ``..`` segments.
    """
    if path_in_repo is None:
        return ""
    if not isinstance(path_in_repo, str):
        raise ParameterError(f"path_in_repo must be a string, got {path_in_repo!r}")
    path = path_in_repo.strip("/")
    if path and any(part in ("", ".", "..") for part in path.split("/")):
        raise ParameterError(
            f"path_in_repo must be a folder path like 'videos/train', got {path_in_repo!r}"
        )
    return path


def split_name(path_in_repo: str) -> str:
    """The split a root's videos belong to by default: its folder's name, or ``train``."""
    return path_in_repo.rsplit("/", 1)[-1] if path_in_repo else "train"


def preview_filename(path_in_repo: str | None) -> str:
    """The preview picture of the root at ``path_in_repo``, relative to the card."""
    path = clean_path_in_repo(path_in_repo)
    if not path:
        return f"{PREVIEW_STEM}.png"
    return f"{PREVIEW_STEM}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', path)}.png"


def user_sections(text: str) -> dict[str, str]:
    """The user-written sections of a card's text, by name (markers not included)."""
    return {m.group("name"): m.group("body") for m in _USER_BLOCK_RE.finditer(text or "")}
