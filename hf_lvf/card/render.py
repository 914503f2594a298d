"""Rendering a card: the Hub metadata, the load code and the template, from roots and options."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError, ParameterTypeError
from ..layout import combined_fields, read_layout
from ..location import pin_root
from .describe import fidelity_text, source_text

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard
from .fields import frame_row_features, inside_context
from .load_code import _load_code, frames_metadata
from .options import (
    _OPTIONS_KEY,
    _USER_DEFAULTS,
    CARD_FILENAME,
    REQUIRED_TAGS,
    TEMPLATE_NAME,
    USER_SECTIONS,
    CardFiles,
    CardOptions,
    CardRoot,
    card_options,
    clean_path_in_repo,
    preview_filename,
    split_name,
    user_sections,
)
from .preview import render_preview
from .stats import (
    _common,
    _count,
    _duration,
    _feature_rows,
    _fps_note,
    _label_table,
    _md,
    _param_rows,
    _size_category,
    _split_order,
    _stats,
    _stats_header,
    _stats_rows,
)

logger = logging.getLogger(__name__)

_ENCODING_NAMES = {"webp": "WebP", "jpeg": "JPEG", "png": "PNG"}


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
    fps: float | None = None,
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
            :func:`preview_filename` ``(path_in_repo)``; the card's ``save(path)`` writes it
            beside ``path`` (:func:`render_preview`).
        storage_options: for reading ``root``.
        Other arguments: see :class:`CardOptions`.

    Returns:
        The card; ``str(card)`` is the ``README.md`` text. Without ``window_length`` (here or
        in ``existing``) it uses one that fits the videos; when no video is long enough for
        the asked one, the card says so.

    Raises:
        RootNotFoundError, LayoutError: ``root`` is not a valid root.
        ValueError: a bad option.

    Examples:
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
        "fps": fps,
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
        storage_options=storage_options,
    )
    card = card_for_roots([entry], options, existing=existing)
    if preview:  # the card links the picture: its save() writes it beside the card
        card.__class__ = _card_with_preview()
        card.preview = (entry.preview, os.fspath(root), storage_options)
    return card


@functools.cache
def _card_with_preview() -> type:
    from huggingface_hub import DatasetCard

    class CardWithPreview(DatasetCard):
        """A card whose ``save(path)`` also writes the preview picture it links, beside it."""

        def save(self, filepath: str | os.PathLike[str]) -> None:
            super().save(filepath)
            name, root, storage_options = self.preview
            picture = render_preview(root, storage_options=storage_options)
            (Path(filepath).parent / name).write_bytes(picture)

    return CardWithPreview


def card_for_roots(
    roots: Sequence[CardRoot],
    options: CardOptions | Mapping[str, Any] | None = None,
    *,
    existing: DatasetCard | str | os.PathLike[str] | None = None,
) -> DatasetCard:
    """The card of the roots of one repo (what :func:`build_card` and ``push_to_hub`` use).

    ``options`` given as a mapping are :class:`CardOptions` fields; a ``None`` value, or a
    missing window parameter, falls back to what the existing card recorded, then to the
    defaults (a ``window_length`` that fits the roots: see :func:`card_options`).
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    if not roots:
        raise ParameterError("a card needs at least one root")
    roots = sorted(roots, key=lambda r: (_split_order(r.split), r.path_in_repo))
    old = _load_existing(existing)
    old_data = old.data.to_dict() if old is not None else {}
    user = user_sections(old.text) if old is not None else {}
    if not isinstance(options, CardOptions):
        options = card_options(options, old_data, roots=roots)
    context = _context(roots, options, old_data, user)
    data = _card_data(roots, options, old_data, context)
    card = DatasetCard.from_template(
        DatasetCardData(**data), template_str=_template_text(), card=context
    )
    return card


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
    picture = output.parent / preview_filename(path_in_repo) if preview else None
    card.save(output)  # and its preview picture
    return CardFiles(output, picture)


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
    raise ParameterTypeError(
        f"existing must be a DatasetCard, a path or the card's text, got {existing!r}"
    )


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
        "fps": p.fps,
        "frame_size": list(options.frame_size) if options.frame_size else None,
        "label_field": options.label_field,
    }
    data[_OPTIONS_KEY] = {k: v for k, v in recorded.items() if v is not None}
    features = frame_row_features(roots)  # per-frame columns too: plain datasets reads them
    data["configs"], data["dataset_info"] = frames_metadata(roots, old, features)
    data.pop("ignore_metadata_errors", None)
    return data


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
    no_window_note = ""
    if num_windows == 0:
        p = options.params
        longest = max(s["max_frames"] for s in stats)
        no_window_note = (
            f"No video is long enough for one window of `window_length={p.window_length}`, "
            f"`frame_skip={p.frame_skip}`"
            + (f", `min_video_frames={p.min_video_frames}`" if p.min_video_frames else "")
            + f" (a window spans {_count(p.span, 'frame')}; the longest video has "
            f"{_count(longest, 'frame')}): pass a smaller `window_length` to the code above."
        )
    sizes: Counter = Counter()
    for s in stats:
        sizes.update(s["sizes"])
    try:
        fields = combined_fields(r.layout for r in roots)
    except ValueError:  # roots that disagree on a field's type: describe the first one's
        fields = roots[0].layout.fields
    frame_size, crop = options.frame_size, "none"
    if frame_size is None and len(sizes) > 1:
        frame_size = sizes.most_common(1)[0][0]
        # Frames of other aspect ratios would be stretched: keep theirs and crop the middle.
        if len({round(w / h, 2) for h, w in sizes}) > 1:
            crop = "center"
    pretty_name = options.pretty_name or old.get("pretty_name") or _default_name(roots, options)
    seconds = sum(s["seconds"] for s in stats)
    with_fps = sum(s["videos_with_fps"] for s in stats)

    summary = (
        f"**{_md(pretty_name)}** is a video dataset of {_count(num_videos, 'video')} "
        f"({_count(num_frames, 'frame')}"
        f"{', ' + _duration(seconds) if with_fps == num_videos else ''}) in "
        f"the *lance-video-frames* layout, read with hf_lvf "
        f"as fixed-length windows of frames for 🤗 datasets and PyTorch."
    )
    if len(roots) > 1:
        parts = ", ".join(f"`{r.path_in_repo or '.'}`" for r in roots)
        summary += f" The repo holds {len(roots)} roots: {parts}."
    code = _load_code(roots, options, frame_size, crop)
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
        "no_window_note": no_window_note,
        "features": _feature_rows(options, fields, sizes, frame_size),
        "roots_text": ("the root" if len(roots) == 1 else f"the {len(roots)} roots"),
        "stats_header": _stats_header(roots),
        "stats_rows": _stats_rows(roots, stats, options),
        "fps_note": _fps_note(stats, num_videos, seconds, with_fps),
        "label_field": options.label_field,
        "label_header": label_header,
        "label_rows": label_rows,
        "other_fields": ", ".join(other),
        **inside_context(roots),
        "quality": _common(r.layout.header.get("quality") for r in roots),
        "encoding_name": _ENCODING_NAMES.get(
            _common(r.layout.header.get("encoding", "webp") for r in roots), "WebP"
        ),
        "lossless": _common(r.layout.header.get("lossless") for r in roots),
        # Of one root only: the PSNRs of several would need their videos' weights.
        "fidelity": (
            fidelity_text(roots[0].layout.header.get("fidelity")) if len(roots) == 1 else None
        ),
        "source": source_text(roots[0].layout.header.get("lineage")) if len(roots) == 1 else None,
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
    num_videos = len(root.layout)
    shown = min(4, num_videos)
    which = (
        "the video"
        if num_videos == 1
        else f"the {num_videos} videos"
        if shown == num_videos
        else f"{shown} of the {num_videos:,} videos"
    )
    return {
        "path_in_repo": root.path_in_repo,
        "preview": root.preview,
        "preview_alt": f"Contact sheet of frames from {where}",
        "preview_caption": (
            f"Frames of {which} of {where}, one video per row, evenly spaced in time (decoded "
            "from the stored WebP frames)."
        ),
    }
