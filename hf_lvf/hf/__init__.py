"""The Hugging Face ``datasets`` front ends: every touch of ``datasets`` is in this package.

:mod:`.builder` and :mod:`.config` (``load_dataset("hf_lvf", ...)`` and its options),
:mod:`.iterable` (``VideoWindows.to_iterable_dataset``), :mod:`.feature` (the
``WindowVideo`` feature of map-style datasets), :mod:`.references` and :mod:`.root_binding`
(reference rows and the root state they name), :mod:`.shards` (clip shards),
:mod:`.internals` (every use of ``datasets`` internals, listed), :mod:`.formatters`,
:mod:`.window_lists` and :mod:`.combining` (formats, ``.batch`` and combining streams).
Built over :mod:`hf_lvf.read`; it may import that and every layer below it.
"""
