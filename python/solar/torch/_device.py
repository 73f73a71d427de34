"""Programs written for a GPU, run on the CPU: ``device="cuda"`` in a model file or a
definition's reference is mapped to the CPU, where SOLAR captures and runs it (docs/capture.md,
"Every reference program captured"; used by the tracer, model files and definitions)."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

DEVICE = torch.device("cpu")  # where the inputs are made and the reference traced
CUDA_NOTE = "device 'cuda' in the reference mapped to the CPU, where SOLAR runs it"


def _is_cuda(value: Any) -> bool:
    return isinstance(value, (str, torch.device)) and str(value).startswith("cuda")


class OnCpu(TorchFunctionMode):
    """Runs a reference written for a GPU on the CPU: ``device="cuda"`` (a string or a
    ``torch.device``) becomes the CPU, ``.cuda()`` is the tensor itself, ``.to("cuda")`` stays
    on the CPU; ``mapped`` says whether any was met. The work is the same on any device."""

    def __init__(self) -> None:
        super().__init__()
        self.mapped = False

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if name == "cuda" and args and isinstance(args[0], torch.Tensor):
            self.mapped = True
            return args[0]
        if _is_cuda(kwargs.get("device")):
            self.mapped = True
            kwargs["device"] = DEVICE
        if name == "to" and any(_is_cuda(a) for a in args[1:]):
            self.mapped = True
            args = tuple(DEVICE if _is_cuda(a) else a for a in args)
        return func(*args, **kwargs)
