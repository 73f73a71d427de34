"""Timing real runs and keeping what they took (docs/calibrate.md): ``clock`` (framework-free
timing of a run: samples, median, spread), ``measurement`` (measurement files, framework-free)
and ``calibrate`` (``solar calibrate``: a device file from this machine's measured ceilings).
The PyTorch timing of a model and of its nodes is ``solar.torch.measure`` and
``solar.torch.node_timing``."""
