"""The reading core: a root's windows as samples, through one view every front end shares.

:mod:`.windows` (:class:`~hf_lvf.VideoWindows`, random access and passes), :mod:`.batches`
(Lance rows -> decoded frames: the frame cache, strips of shared frames), :mod:`.orders`
(reading ahead of a known order), :mod:`.segments` and :mod:`.samples` (a root's plan and
the sample dicts with their features), :mod:`.describe` (what a root holds) and
:mod:`.show` (a window as a picture). It may import the plan, where a root lives, the video
table, frames and decoding; never ``datasets`` or a front end.
"""
