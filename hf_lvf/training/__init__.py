"""The PyTorch helpers: :func:`~hf_lvf.safe_dataloader` (:mod:`.loader`),
:class:`~hf_lvf.ClipSampler` (:mod:`.sampler`) and :class:`~hf_lvf.LeRobotWindows`
(:mod:`.lerobot_windows`, LeRobotDataset's samples). torch is imported lazily.

Built over :mod:`hf_lvf.read` and the ``datasets`` front ends (:mod:`hf_lvf.hf`), which
it may import with every layer below them.
"""
