"""Writing and growing roots: :func:`~hf_lvf.write_frames` (:mod:`.writer`; what a video
given to it is, per-frame fields and spans included: :mod:`.videos`; videos -> record
batches: :mod:`.batches`), appending in place (:mod:`.append`; :mod:`.store_roots` on object
stores, without a rename), a folder of roots (one per split or camera) written whole
(:mod:`.folders`), merging (:mod:`.merge`), adding per-frame columns to a root
(:mod:`.columns`) and synthetic clips for demos and tests (:mod:`.synthetic`).

Every write is atomic: a reader never sees a half-written root. Sits beside the reading
side, above the front ends; it may import every layer below it. Converting video files
(:mod:`hf_lvf.convert`) builds on it.
"""
