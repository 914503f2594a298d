"""Video files -> a new lance-video-frames root, in parallel, atomically.

The work is split per video. Each task decodes one file with PyAV, turns its
frames into RGB (optionally resized and resampled to a target frame rate),
encodes them to WebP and writes them as Lance fragments straight into the
root's scratch folder. Only small results travel back to the parent: the
fragment metadata, the frame count and size, the checksum. The parent then
commits every fragment once, in video order, and writes ``_metadata.json``.
So frames never pass through the parent, and a task holds one decoded frame,
one batch of encoded ones and lance's fixed-size write buffer at a time,
whatever the length of its video.

- :mod:`.sources`: what to convert (files, globs, ``videofolder`` labels and metadata);
- :mod:`.decoding`: one video file -> RGB frames (PyAV);
- :mod:`.pool`: the per-video tasks and the worker pool;
- :mod:`.api`: :func:`convert_videos` and its summary.

The public home of converting: ``hf_lvf.convert.convert_videos``, its
:class:`ConversionSummary` and the :class:`SkippedVideo` records in it.
"""

from .api import ConversionSummary, SkippedVideo, convert_videos

__all__ = ["ConversionSummary", "SkippedVideo", "convert_videos"]
