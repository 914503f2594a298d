"""Dataset cards for lance-video-frames roots: Hub metadata, load code, statistics, a preview.

A card is rendered from the Jinja template ``cards/dataset_card.md`` (shipped inside the
package as ``hf_lvf/cards``) with :meth:`huggingface_hub.DatasetCard.from_template`; its YAML
header is a :class:`huggingface_hub.DatasetCardData`. Everything in it is computed from the
roots' ``_metadata.json`` except the preview picture, a contact sheet of real frames, and the
text between ``<!-- hf_lvf:user:begin NAME -->`` / ``<!-- hf_lvf:user:end NAME -->`` markers,
which is carried over from an existing card when the card is regenerated.

Pillow is used here (besides :mod:`hf_lvf.decode`) only to encode the contact sheet as PNG.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .layout import RootLayout, read_layout
from .plan import WindowParams, plan_windows
from .windows import metadata_fields

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

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
    "frame_size",
    "label_field",
)
_SIZE_CATEGORIES = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
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
_PARAM_MEANINGS = {
    "window_length": "frames per sample",
    "frame_skip": "frames skipped between two frames of a sample",
    "hop_size": "frames between the starts of two consecutive samples of a video",
    "min_video_frames": "videos with fewer frames yield no sample",
    "frame_size": "`(H, W)` every frame is resized to on decode",
}


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
            raise ValueError(f"repo_id must be 'namespace/name', got {self.repo_id!r}")
        for name in ("revision", "pretty_name", "license"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")
        hop_size = self.window_length if self.hop_size is None else self.hop_size
        # WindowParams validates the numbers and names the bad one.
        WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=hop_size,
            min_video_frames=self.min_video_frames,
        )
        object.__setattr__(self, "hop_size", hop_size)
        if self.frame_size is not None:
            from .windows import check_frame_size

            object.__setattr__(self, "frame_size", check_frame_size(self.frame_size))
        for name in ("task_categories", "tags"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str):
                value = (value,)
            value = tuple(value)
            if not all(isinstance(v, str) and v.strip() for v in value):
                raise ValueError(f"{name} must be a list of non-empty strings, got {value!r}")
            object.__setattr__(self, name, value)
        if not isinstance(self.label_field, str) or not self.label_field:
            raise ValueError(f"label_field must be a non-empty string, got {self.label_field!r}")

    @property
    def params(self) -> WindowParams:
        return WindowParams(
            window_length=self.window_length,
            frame_skip=self.frame_skip,
            hop_size=self.hop_size,  # type: ignore[arg-type]  # set in __post_init__
            min_video_frames=self.min_video_frames,
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
    """

    layout: RootLayout
    path_in_repo: str = ""
    split: str = "train"
    preview: str | None = None
    _stats: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


# --- public entry points ---


def build_card(
    root: str | os.PathLike[str],
    *,
    repo_id: str | None = None,
    path_in_repo: str | None = None,
    revision: str | None = None,
    window_length: int | None = None,
    frame_skip: int | None = None,
    hop_size: int | None = None,
    min_video_frames: int | None = None,
    frame_size: tuple[int, int] | None = None,
    pretty_name: str | None = None,
    license: str | None = None,
    task_categories: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    label_field: str | None = None,
    existing: DatasetCard | str | os.PathLike[str] | None = None,
    preview: bool = True,
    storage_options: Mapping[str, str] | None = None,
) -> DatasetCard:
    """The dataset card of one root.

    Args:
        root: the root (a local folder, or ``hf://`` with ``storage_options``).
        path_in_repo: where the root sits in ``repo_id`` (default: the repo's top).
        existing: the current card (a :class:`~huggingface_hub.DatasetCard`, the path of a
            ``README.md``, or its text): its user-written sections and the metadata fields the
            card does not compute are kept.
        preview: reference a preview picture beside the card, named
            :func:`preview_filename` ``(path_in_repo)`` (write it with :func:`render_preview`).
        storage_options: for reading ``root``.
        Other arguments: see :class:`CardOptions`.

    Returns:
        The card; ``str(card)`` is the ``README.md`` text.

    Raises:
        RootNotFoundError, LayoutError: ``root`` is not a valid root.
        ValueError: a bad option, or no video is long enough for one window.

    Example:
        >>> card = build_card("clips/", repo_id="me/clips", license="cc-by-4.0")  # doctest: +SKIP
        >>> card.save("clips/README.md")                                           # doctest: +SKIP
    """
    options = {
        "repo_id": repo_id,
        "revision": revision,
        "window_length": window_length,
        "frame_skip": frame_skip,
        "hop_size": hop_size,
        "min_video_frames": min_video_frames,
        "frame_size": frame_size,
        "pretty_name": pretty_name,
        "license": license,
        "task_categories": task_categories,
        "tags": tags,
        "label_field": label_field,
    }
    path_in_repo = clean_path_in_repo(path_in_repo)
    layout = read_layout(os.fspath(root), storage_options=storage_options)
    entry = CardRoot(
        layout=layout,
        path_in_repo=path_in_repo,
        split=split_name(path_in_repo),
        preview=preview_filename(path_in_repo) if preview else None,
    )
    return card_for_roots([entry], options, existing=existing)


def card_for_roots(
    roots: Sequence[CardRoot],
    options: CardOptions | Mapping[str, Any] | None = None,
    *,
    existing: DatasetCard | str | os.PathLike[str] | None = None,
) -> DatasetCard:
    """The card of the roots of one repo (what :func:`build_card` and ``push_to_hub`` use).

    ``options`` given as a mapping are :class:`CardOptions` fields; a ``None`` value, or a
    missing window parameter, falls back to what the existing card recorded, then to the
    defaults.
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    if not roots:
        raise ValueError("a card needs at least one root")
    roots = sorted(roots, key=lambda r: (_split_order(r.split), r.path_in_repo))
    old = _load_existing(existing)
    old_data = old.data.to_dict() if old is not None else {}
    user = user_sections(old.text) if old is not None else {}
    if not isinstance(options, CardOptions):
        options = card_options(options, old_data)
    context = _context(roots, options, old_data, user)
    data = _card_data(roots, options, old_data, context)
    card = DatasetCard.from_template(
        DatasetCardData(**data), template_str=_template_text(), card=context
    )
    return card


def card_options(
    overrides: Mapping[str, Any] | None = None, existing_data: Mapping[str, Any] | None = None
) -> CardOptions:
    """:class:`CardOptions` from explicit values, else those an existing card recorded.

    ``existing_data`` is the card's metadata (``card.data.to_dict()``); hf_lvf records the
    window parameters under its ``hf_lvf`` key, so a regenerated card keeps them.
    """
    stored = (existing_data or {}).get(_OPTIONS_KEY)
    values: dict[str, Any] = {}
    if isinstance(stored, Mapping):
        for name in _STORED_OPTIONS:
            if stored.get(name) is not None:
                values[name] = stored[name]
    if isinstance(values.get("frame_size"), list):
        values["frame_size"] = tuple(values["frame_size"])
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return CardOptions(**values)


def render_preview(
    root: str | os.PathLike[str] | RootLayout,
    *,
    storage_options: Mapping[str, str] | None = None,
    max_videos: int = 4,
    frames_per_video: int = 6,
    tile_width: int | None = None,
) -> bytes:
    """A contact sheet of real frames as PNG bytes: one row per video, frames evenly spaced.

    Args:
        root: the root, or its layout.
        storage_options: for reading the root.
        max_videos: rows; videos are picked evenly across the video table.
        frames_per_video: columns; frames are picked evenly through each video.
        tile_width: width of a frame in the sheet; default 2x the first video's, within 128-192.

    Raises:
        ValueError: ``max_videos`` or ``frames_per_video`` is < 1.
        FrameDecodeError: a picked frame is corrupt.
    """
    from PIL import Image

    from .windows import VideoWindows

    for name, value in (("max_videos", max_videos), ("frames_per_video", frames_per_video)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    layout = (
        root
        if isinstance(root, RootLayout)
        else read_layout(os.fspath(root), storage_options=storage_options)
    )
    videos = _preview_videos(layout, max_videos)
    first = layout.videos[videos[0]]
    if tile_width is None:
        tile_width = min(max(2 * first.width, 128), 192)
    tile_height = max(1, round(tile_width * first.height / first.width))
    windows = VideoWindows.from_layout(
        layout,
        WindowParams(window_length=1),
        frame_size=(tile_height, tile_width),
        storage_options=storage_options,
    )
    columns = min(frames_per_video, max(layout.videos[v].num_frames for v in videos))
    picks = []
    for v in videos:
        num_frames = layout.videos[v].num_frames
        frames = np.unique(
            np.linspace(0, num_frames - 1, min(columns, num_frames)).round().astype(np.int64)
        )
        picks.append(windows.plan.first_window[v] + frames)
    tiles = windows.read_video(np.concatenate(picks))[:, 0]
    gap = 4
    sheet = np.full(
        (
            len(videos) * (tile_height + gap) + gap,
            columns * (tile_width + gap) + gap,
            3,
        ),
        24,
        np.uint8,
    )
    k = 0
    for row, frames in enumerate(picks):
        for col in range(len(frames)):
            y = gap + row * (tile_height + gap)
            x = gap + col * (tile_width + gap)
            sheet[y : y + tile_height, x : x + tile_width] = tiles[k]
            k += 1
    buf = io.BytesIO()
    Image.fromarray(sheet, "RGB").save(buf, format="PNG")
    return buf.getvalue()


def write_card(
    root: str | os.PathLike[str],
    output: str | os.PathLike[str] = CARD_FILENAME,
    *,
    preview: bool = True,
    storage_options: Mapping[str, str] | None = None,
    **card_options: Any,
) -> CardFiles:
    """Write the card of ``root`` to ``output`` and its preview picture beside it.

    User-written sections of an existing ``output`` are kept. ``card_options`` are the
    keyword arguments of :func:`build_card`. An ``hf://`` root is pinned to a commit first,
    and names the repo and path of the load code unless ``repo_id`` is given.

    Returns:
        The paths of the card and of the picture (``None`` without ``preview``).
    """
    output = Path(output)
    existing = card_options.pop("existing", None)
    if existing is None and output.is_file():
        existing = output
    root = os.fspath(root)
    if root.startswith("hf://"):
        from .hub import pin_root

        pinned = pin_root(root, storage_options=storage_options)
        root, storage_options = pinned.uri, pinned.storage_options
        if card_options.get("repo_id") is None:
            card_options["repo_id"] = pinned.path.repo_id
            if card_options.get("path_in_repo") is None:
                card_options["path_in_repo"] = pinned.path.path_in_repo
    path_in_repo = clean_path_in_repo(card_options.get("path_in_repo"))
    card = build_card(
        root, existing=existing, preview=preview, storage_options=storage_options, **card_options
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    picture = None
    if preview:
        picture = output.parent / preview_filename(path_in_repo)
        picture.write_bytes(render_preview(root, storage_options=storage_options))
    card.save(output)
    return CardFiles(output, picture)


# --- helpers shared with hub.py ---


def clean_path_in_repo(path_in_repo: str | None) -> str:
    """``path_in_repo`` without surrounding slashes (``""`` for the repo's top).

    Raises:
        ValueError: it has empty, ``.`` or ``..`` segments.
    """
    if path_in_repo is None:
        return ""
    if not isinstance(path_in_repo, str):
        raise ValueError(f"path_in_repo must be a string, got {path_in_repo!r}")
    path = path_in_repo.strip("/")
    if path and any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(
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


# --- internals ---


def _template_text() -> str:
    return (resources.files("hf_lvf") / "cards" / TEMPLATE_NAME).read_text(encoding="utf-8")


def _load_existing(existing: Any) -> DatasetCard | None:
    from huggingface_hub import DatasetCard

    if existing is None or isinstance(existing, DatasetCard):
        return existing
    if isinstance(existing, os.PathLike) or (
        isinstance(existing, str) and "\n" not in existing and Path(existing).is_file()
    ):
        return DatasetCard(Path(existing).read_text(encoding="utf-8"), ignore_metadata_errors=True)
    if isinstance(existing, str):
        return DatasetCard(existing, ignore_metadata_errors=True)
    raise TypeError(f"existing must be a DatasetCard, a path or the card's text, got {existing!r}")


def _size_category(count: int) -> str:
    for limit, name in _SIZE_CATEGORIES:
        if count < limit:
            return name
    return "n>1B" if count < 10_000_000_000 else "10B<n<100B"


def _card_data(
    roots: Sequence[CardRoot],
    options: CardOptions,
    old: Mapping[str, Any],
    context: Mapping[str, Any],
) -> dict[str, Any]:
    data = {k: v for k, v in old.items() if v is not None}
    has_labels = bool(context["label_rows"])
    old_tags = old.get("tags") or []
    if isinstance(old_tags, str):
        old_tags = [old_tags]
    tags = list(dict.fromkeys([*REQUIRED_TAGS, *options.tags, *old_tags]))
    if options.task_categories is not None:
        tasks: Any = list(options.task_categories)
    elif old.get("task_categories"):
        tasks = old["task_categories"]
    else:
        tasks = ["video-classification"] if has_labels else ["other"]
    data.update(
        license=options.license or old.get("license") or "unknown",
        pretty_name=context["pretty_name"],
        task_categories=tasks,
        tags=tags,
        size_categories=[_size_category(context["num_windows"])],
    )
    p = options.params
    recorded = {
        "window_length": p.window_length,
        "frame_skip": p.frame_skip,
        "hop_size": p.hop_size,
        "min_video_frames": p.min_video_frames,
        "frame_size": list(options.frame_size) if options.frame_size else None,
        "label_field": options.label_field,
    }
    data[_OPTIONS_KEY] = {k: v for k, v in recorded.items() if v is not None}
    data.pop("ignore_metadata_errors", None)
    return data


def _stats(root: CardRoot, options: CardOptions) -> dict[str, Any]:
    if root._stats:
        return root._stats
    layout = root.layout
    num_frames = layout.num_frames
    plan = plan_windows(num_frames, options.params)
    sizes = Counter((v.height, v.width) for v in layout.videos)
    fps = [_fps(v.metadata) for v in layout.videos]
    seconds = [t / f for t, f in zip(num_frames.tolist(), fps, strict=True) if f]
    stats = {
        "num_videos": len(layout.videos),
        "num_frames": int(num_frames.sum()),
        "num_windows": len(plan),
        "windows_per_video": plan.windows_per_video,
        "sizes": sizes,
        "fps": [f for f in fps if f],
        "seconds": float(sum(seconds)),
        "videos_with_fps": len(seconds),
        "min_frames": int(num_frames.min()),
        "max_frames": int(num_frames.max()),
    }
    root._stats.update(stats)
    return stats


def _fps(metadata: Mapping[str, Any]) -> float | None:
    value = metadata.get("fps")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    return float(value)


def _context(
    roots: Sequence[CardRoot],
    options: CardOptions,
    old: Mapping[str, Any],
    user: Mapping[str, str],
) -> dict[str, Any]:
    stats = [_stats(r, options) for r in roots]
    num_videos = sum(s["num_videos"] for s in stats)
    num_frames = sum(s["num_frames"] for s in stats)
    num_windows = sum(s["num_windows"] for s in stats)
    if num_windows == 0:
        p = options.params
        longest = max(s["max_frames"] for s in stats)
        raise ValueError(
            f"no video is long enough for one window of window_length={p.window_length}, "
            f"frame_skip={p.frame_skip} (span {p.span} frames; the longest video has {longest}): "
            "pass a smaller window_length"
        )
    sizes: Counter = Counter()
    for s in stats:
        sizes.update(s["sizes"])
    try:
        fields = metadata_fields([v for r in roots for v in r.layout.videos])
    except ValueError:  # roots that disagree on a field's type: describe the first one's
        fields = metadata_fields(roots[0].layout.videos)
    frame_size = options.frame_size
    if frame_size is None and len(sizes) > 1:
        frame_size = sizes.most_common(1)[0][0]
    pretty_name = options.pretty_name or old.get("pretty_name") or _default_name(roots, options)
    seconds = sum(s["seconds"] for s in stats)
    with_fps = sum(s["videos_with_fps"] for s in stats)

    summary = (
        f"**{_md(pretty_name)}** is a video dataset of {num_videos:,} videos "
        f"({num_frames:,} frames{', ' + _duration(seconds) if with_fps == num_videos else ''}) in "
        f"the *lance-video-frames* layout, read with [hf_lvf](https://pypi.org/project/hf-lvf/) "
        f"as fixed-length windows of frames for 🤗 datasets and PyTorch."
    )
    if len(roots) > 1:
        parts = ", ".join(f"`{r.path_in_repo or '.'}`" for r in roots)
        summary += f" The repo holds {len(roots)} roots: {parts}."
    code = _load_code(roots, options, frame_size)
    label_header, label_rows = _label_table(roots, options.label_field)
    other = [f"`{name}` ({dtype})" for name, dtype in fields.items() if name != options.label_field]
    return {
        "pretty_name": _md(pretty_name),
        "summary": summary,
        "user": {name: user.get(name, _USER_DEFAULTS[name]) for name in USER_SECTIONS},
        "roots": [_root_context(r) for r in roots],
        **code,
        "params": _param_rows(options, frame_size),
        "num_windows": num_windows,
        "num_windows_text": f"{num_windows:,}",
        "features": _feature_rows(options, fields, sizes, frame_size),
        "roots_text": ("the root" if len(roots) == 1 else f"the {len(roots)} roots"),
        "stats_header": _stats_header(roots),
        "stats_rows": _stats_rows(roots, stats, options),
        "fps_note": _fps_note(stats, num_videos, seconds, with_fps),
        "label_field": options.label_field,
        "label_header": label_header,
        "label_rows": label_rows,
        "other_fields": ", ".join(other),
        "quality": _common(r.layout.raw.get("quality") for r in roots),
    }


def _default_name(roots: Sequence[CardRoot], options: CardOptions) -> str:
    if options.repo_id:
        name = options.repo_id.split("/")[1]
    else:
        uri = roots[0].layout.uri.rstrip("/")
        name = uri.rsplit("/", 1)[-1] or "videos"
    return re.sub(r"[-_]+", " ", name).strip() or name


def _root_context(root: CardRoot) -> dict[str, Any]:
    where = f"`{root.path_in_repo}`" if root.path_in_repo else "the root"
    videos = root.layout.videos
    return {
        "path_in_repo": root.path_in_repo,
        "preview": root.preview,
        "preview_alt": f"Contact sheet of frames from {where}",
        "preview_caption": (
            f"Frames of {min(4, len(videos))} of the {len(videos)} videos of {where}, one video "
            "per row, evenly spaced in time (decoded from the stored WebP frames)."
        ),
    }


def _load_code(
    roots: Sequence[CardRoot], options: CardOptions, frame_size: tuple[int, int] | None
) -> dict[str, str]:
    repo_id = options.repo_id or "<namespace>/<dataset>"
    revision = options.revision or "main"
    p = options.params
    kwargs = [f"window_length={p.window_length}"]
    if p.frame_skip:
        kwargs.append(f"frame_skip={p.frame_skip}")
    kwargs.append(f"hop_size={p.hop_size}")
    if p.min_video_frames is not None:
        kwargs.append(f"min_video_frames={p.min_video_frames}")
    if frame_size is not None:
        kwargs.append(f"frame_size=({frame_size[0]}, {frame_size[1]})")
    first = roots[0]
    sub = f"/{first.path_in_repo}" if first.path_in_repo else ""
    windows_code = "\n".join(
        [
            "from hf_lvf import VideoWindows",
            "",
            "windows = VideoWindows(",
            f'    "hf://datasets/{repo_id}{sub}",',
            f'    revision="{revision}",  # a branch, tag or commit sha; resolved once',
            *(f"    {k}," for k in kwargs),
            ")",
            'sample = windows[0]  # sample["video"]: uint8 array (window_length, H, W, 3)',
        ]
    )
    if len(roots) > 1:
        others = ", ".join(
            f'"hf://datasets/{repo_id}' + (f"/{r.path_in_repo}" if r.path_in_repo else "") + '"'
            for r in roots[1:]
        )
        windows_code += f"\n# the repo's other roots: {others}"
    data_files = _data_files_code(roots, repo_id, revision)
    call = ["from datasets import load_dataset", "", "ds = load_dataset(", '    "hf_lvf",']
    call += [f"    data_files={data_files},", *(f"    {k}," for k in kwargs)]
    streaming = "\n".join([*call, "    streaming=True,", ")"])
    download = "\n".join([*call, ")"])
    note = (
        f"`revision` (and the `@{revision}` in `data_files`) picks what you read: a branch or tag "
        "follows new pushes, a commit sha pins the data; hf_lvf resolves it to a commit once and "
        "reads every byte from that commit."
    )
    return {
        "windows_code": windows_code,
        "streaming_code": streaming,
        "download_code": download,
        "revision_note": note,
    }


def _data_files_code(roots: Sequence[CardRoot], repo_id: str, revision: str) -> str:
    def pattern(root: CardRoot) -> str:
        sub = f"/{root.path_in_repo}" if root.path_in_repo else ""
        return f'"hf://datasets/{repo_id}@{revision}{sub}/**"'

    if len(roots) == 1:
        return pattern(roots[0])
    splits: dict[str, list[str]] = {}
    for root in roots:
        splits.setdefault(root.split, []).append(pattern(root))
    items = [
        f'"{split}": {files[0] if len(files) == 1 else "[" + ", ".join(files) + "]"}'
        for split, files in splits.items()
    ]
    return "{\n        " + ",\n        ".join(items) + ",\n    }"


def _param_rows(options: CardOptions, frame_size: tuple[int, int] | None) -> list[dict[str, str]]:
    p = options.params
    rows = [
        ("window_length", str(p.window_length)),
        ("frame_skip", str(p.frame_skip)),
        ("hop_size", str(p.hop_size)),
        ("min_video_frames", "none" if p.min_video_frames is None else str(p.min_video_frames)),
    ]
    if frame_size is not None:
        rows.append(("frame_size", f"({frame_size[0]}, {frame_size[1]})"))
    return [{"name": n, "value": v, "meaning": _PARAM_MEANINGS[n]} for n, v in rows]


def _feature_rows(
    options: CardOptions,
    fields: Mapping[str, str],
    sizes: Counter,
    frame_size: tuple[int, int] | None,
) -> list[dict[str, str]]:
    length = options.window_length
    if frame_size is not None:
        height, width = frame_size
    else:
        height, width = next(iter(sizes))
    rows = [
        ("video", f"`Array4D(({length}, {height}, {width}, 3), uint8)`", "the frames, RGB"),
        ("video_idx", "`int32`", "index of the video in `_metadata.json`"),
        ("filename", "`string`", "the video's source path (a label)"),
        ("start_frame", "`int32`", "first frame of the window"),
        ("frame_indices", f"`List(int32, length={length})`", "the frame numbers of the window"),
        ("sample_idx", "`int64`", "the sample's index"),
    ]
    for name, dtype in fields.items():
        meaning = "per-video field"
        if name == options.label_field:
            meaning = "the video's label"
        elif name == "fps":
            meaning = "frames per second of the source video"
        elif name == "split":
            meaning = "the video's split"
        rows.append((name, f"`{dtype}`", meaning))
    return [{"name": n, "type": t, "content": c} for n, t, c in rows]


def _stats_header(roots: Sequence[CardRoot]) -> list[str]:
    head = ["root"] if len(roots) > 1 else []
    return [
        *head,
        "videos",
        "frames",
        "frames per video",
        "samples",
        "frame size (H×W)",
        "duration",
    ]


def _stats_rows(
    roots: Sequence[CardRoot], stats: Sequence[Mapping[str, Any]], options: CardOptions
) -> list[list[str]]:
    rows = []
    for root, s in zip(roots, stats, strict=True):
        sizes = ", ".join(
            f"{h}×{w}" + (f" ({n} videos)" if len(s["sizes"]) > 1 else "")
            for (h, w), n in sorted(s["sizes"].items(), key=lambda kv: (-kv[1], kv[0]))
        )
        if s["videos_with_fps"] == s["num_videos"]:
            duration = _duration(s["seconds"])
        elif s["videos_with_fps"]:
            duration = (
                f"{_duration(s['seconds'])} ({s['videos_with_fps']} of {s['num_videos']} videos)"
            )
        else:
            duration = "unknown (no fps)"
        frames_per_video = (
            str(s["min_frames"])
            if s["min_frames"] == s["max_frames"]
            else f"{s['min_frames']:,}–{s['max_frames']:,}"
        )
        row = [
            f"{s['num_videos']:,}",
            f"{s['num_frames']:,}",
            frames_per_video,
            f"{s['num_windows']:,}",
            sizes,
            duration,
        ]
        if len(roots) > 1:
            row.insert(0, f"`{root.path_in_repo or '.'}`")
        rows.append(row)
    return rows


def _fps_note(
    stats: Sequence[Mapping[str, Any]], num_videos: int, seconds: float, with_fps: int
) -> str:
    if not with_fps:
        return (
            "No video records its frame rate (an `fps` field), so durations are unknown; the "
            "dataset counts frames."
        )
    rates = sorted({f for s in stats for f in s["fps"]})
    shown = ", ".join(f"{r:g}" for r in rates[:5]) + (", ..." if len(rates) > 5 else "")
    where = "every video" if with_fps == num_videos else f"{with_fps} of {num_videos} videos"
    return f"Durations use the `fps` recorded for {where} ({shown} fps)."


def _label_table(roots: Sequence[CardRoot], label_field: str) -> tuple[list[str], list[list[str]]]:
    counts: dict[str, Counter] = {}
    seen_label = False
    for root in roots:
        for video in root.layout.videos:
            split = video.metadata.get("split")
            split = str(split) if split not in (None, "") else root.split
            label = video.metadata.get(label_field)
            seen_label = seen_label or label is not None
            counts.setdefault(split, Counter())[label] += 1
    if not seen_label:
        return [], []
    splits = sorted(counts, key=_split_order)
    labels = sorted({lab for c in counts.values() for lab in c}, key=_label_order)
    header = [f"`{label_field}`", *splits]
    if len(splits) > 1:
        header.append("total")
    rows = []
    for label in labels:
        row = ["*(none)*" if label is None else _md(str(label))]
        row += [f"{counts[s][label]:,}" for s in splits]
        if len(splits) > 1:
            row.append(f"{sum(counts[s][label] for s in splits):,}")
        rows.append(row)
    total = ["**total**", *(f"{sum(counts[s].values()):,}" for s in splits)]
    if len(splits) > 1:
        total.append(f"{sum(sum(c.values()) for c in counts.values()):,}")
    rows.append(total)
    return header, rows


def _split_order(name: str) -> tuple[int, str]:
    order = {"train": 0, "validation": 1, "valid": 1, "val": 1, "dev": 1, "test": 2}
    return order.get(name, 3), name


def _label_order(label: Any) -> tuple[int, Any]:
    if label is None:
        return 2, ""
    if isinstance(label, (int, float)) and not isinstance(label, bool):
        return 0, label
    return 1, str(label)


def _preview_videos(layout: RootLayout, max_videos: int) -> list[int]:
    candidates = [v.video_idx for v in layout.videos if v.num_frames > 0]
    if len(candidates) <= max_videos:
        return candidates
    picks = np.linspace(0, len(candidates) - 1, max_videos).round().astype(int)
    return [candidates[i] for i in dict.fromkeys(picks.tolist())]


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _common(values: Any) -> Any:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or heading."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


__all__ = [
    "CARD_FILENAME",
    "CardFiles",
    "CardOptions",
    "CardRoot",
    "build_card",
    "card_for_roots",
    "card_options",
    "clean_path_in_repo",
    "preview_filename",
    "render_preview",
    "user_sections",
    "write_card",
]
