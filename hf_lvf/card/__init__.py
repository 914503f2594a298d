"""Dataset cards for lance-video-frames roots: Hub metadata, load code, statistics, a preview.

A card is rendered from the Jinja template ``cards/dataset_card.md`` (shipped inside the
package as ``hf_lvf/cards``) with :meth:`huggingface_hub.DatasetCard.from_template`; its YAML
header is a :class:`huggingface_hub.DatasetCardData`. Everything in it is computed from the
roots' ``_metadata.json`` except the preview picture, a contact sheet of real frames, and the
text between ``<!-- hf_lvf:user:begin NAME -->`` / ``<!-- hf_lvf:user:end NAME -->`` markers,
which is carried over from an existing card when the card is regenerated.

- :mod:`.options`: what a card says beyond the roots, the roots it describes, file names;
- :mod:`.stats`: statistics and table rows;
- :mod:`.preview`: the contact sheet;
- :mod:`.render`: the metadata, the load code and the template.
"""

from .options import (
    CARD_FILENAME,
    PREVIEW_STEM,
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
from .render import build_card, card_for_roots, write_card

__all__ = [
    "CARD_FILENAME",
    "PREVIEW_STEM",
    "CardFiles",
    "CardOptions",
    "CardRoot",
    "build_card",
    "card_for_roots",
    "card_options",
    "clean_path_in_repo",
    "preview_filename",
    "render_preview",
    "split_name",
    "user_sections",
    "write_card",
]
