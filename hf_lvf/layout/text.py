"""Writing ``_metadata.json``: the text of a new one, and an existing one grown or changed.

Growing a root never re-encodes the entries it has: their text is kept as it is
and the new entries follow it, so rewriting the file of a million videos costs
about what writing it does (README, "Scale").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .table import decode_top_level

_INDENT = 1


def encode_metadata(metadata: Mapping[str, Any]) -> bytes:
    """The text of a ``_metadata.json`` holding ``metadata`` (one space a level, as hf_lvf
    has always written it)."""
    return msgspec.json.format(msgspec.json.encode(metadata), indent=_INDENT) + b"\n"


def rewrite_metadata(
    data: bytes,
    *,
    where: str,
    updates: Mapping[str, Any] | None = None,
    new_entries: Sequence[Mapping[str, Any]] = (),
) -> bytes:
    """The text of ``data`` (a ``_metadata.json``) with top-level fields set to ``updates``
    (new ones last) and ``new_entries`` after its videos; all else kept byte for byte.

    Raises:
        LayoutError: ``data`` is not a JSON object (see ``parse_metadata``).
    """
    top = decode_top_level(data, where)
    updates = dict(updates or {})
    parts = []
    for name, raw in top.items():
        if name == "videos" and new_entries:
            parts.append((name, _extended(bytes(raw), new_entries)))
        elif name in updates:
            parts.append((name, _encode(updates.pop(name))))
        else:
            parts.append((name, bytes(raw)))
    parts += [(name, _encode(value)) for name, value in updates.items()]
    body = b",\n".join(b" " + msgspec.json.encode(name) + b": " + value for name, value in parts)
    return b"{\n" + body + b"\n}\n"


def _encode(value: Any) -> bytes:
    text = msgspec.json.format(msgspec.json.encode(value), indent=_INDENT)
    return text.replace(b"\n", b"\n" + b" " * _INDENT)  # nested one level down


def _extended(videos: bytes, entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The JSON list ``videos`` with ``entries`` after its items."""
    head = videos.rstrip()
    assert head.endswith(b"]"), "decode_top_level returned a list's text"
    head = head[:-1].rstrip()
    new = _encode(list(entries)).strip()[1:-1].strip()  # the items, without the brackets
    separator = b"," if head != b"[" else b""
    return head + separator + b"\n" + b" " * (2 * _INDENT) + new + b"\n" + b" " * _INDENT + b"]"
