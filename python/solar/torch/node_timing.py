"""Per-node timing of a model file, for per-node headroom (docs/calibrate.md, "Per-node headroom").

The model is built for real (``torch.manual_seed(0)``, as ``solar.torch.measure``), moved to the
device and captured there; its captured FX graph then runs in a ``torch.fx.Interpreter``, ``warmup``
untimed runs, then ``repeats`` timed runs; a node's time is the median over the runs:

- on the CPU, the wall clock (``time.perf_counter``) around the node's call alone (its arguments
  are fetched first; the interpreter's own work is outside);
- on CUDA, each captured node's call runs in ``torch.profiler.record_function("solar.node:<name>")``
  under ``torch.profiler`` (CPU and CUDA activities), and its time is the device time of the
  kernels launched inside the range (a view that launches none takes 0).

(The profiler's CPU time of a range is not used on the CPU: its own bookkeeping of every ATen
call inside the range costs more than a small op.)

The capture is lowered here as well (``_core.lower_capture_detailed``, unsupported nodes allowed),
so that each node carries the IR kernels and the tensors it became: the ``sol`` command attributes
the einsum graph's nodes to captured nodes by them (``--measured-nodes``). torch is imported only
when a function here is called.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

LABEL = "solar.node:"


def _label_of_fx(cap: Any) -> dict[str, str]:
    """FX node name -> capture node name, through the node's first output tensor."""
    node_of_tensor = {}
    for node in cap.document["nodes"]:
        first = next((o for o in node["outputs"] if isinstance(o, str)), None)
        if first is not None:
            node_of_tensor[first] = node["name"]
    labels = {}
    for fx in cap.traced.graph.nodes:
        if fx.op != "call_function":
            continue
        names = cap.elements.get(fx.name) or [cap.fx_to_name.get(fx.name)]
        first = next((n for n in names if n), None)
        if first in node_of_tensor:
            labels[fx.name] = node_of_tensor[first]
    return labels


def _placeholder_args(cap: Any, model: Any, inputs: tuple) -> list:
    from torch.utils import _pytree as pytree

    flat = list(pytree.tree_leaves(inputs))
    values = []
    for node in cap.traced.graph.nodes:
        if node.op != "placeholder":
            continue
        b = cap.traced.placeholders[node.name]
        if b.kind == "input":
            values.append(flat[b.index])
        elif b.kind == "weight":
            values.append(model.get_parameter(b.target))
        elif b.kind == "buffer":
            values.append(model.get_buffer(b.target))
        else:
            values.append(b.value)
    return values


def time_nodes(
    build: Callable[[], tuple[Any, tuple]],
    source: str,
    device: str | None = None,
    warmup: int = 3,
    repeats: int = 20,
) -> dict:
    """The per-node times of the model ``build()`` returns with its inputs (the model file
    ``source``, built by the PyTorch adapter, ``solar.torch.measure_file``): the
    ``--measured-nodes`` document, {"device", "method", "nodes": [{"node", "op", "measured_s",
    "lowered", "kernels", "tensors"}]} with the captured nodes in program order."""
    if warmup < 0 or repeats < 1:
        raise ValueError("warm-up must be >= 0 and repeats >= 1")
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from solar import stages
    from solar.torch.capture import capture
    from solar.torch.measure import local_device_name, pick_device

    dev = pick_device(device)
    model, inputs = build()
    if hasattr(model, "to"):
        model = model.to(dev)
    inputs = tuple(x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs)
    cap = capture(model, inputs, source=source)
    lowered = stages.lower_detailed(cap.to_json(), allow_unsupported=True)
    labels = _label_of_fx(cap)
    module = cap.traced.module.to(dev)
    values = _placeholder_args(cap, model, inputs)
    args = [v.to(dev) if isinstance(v, torch.Tensor) else v for v in values]

    samples: dict[str, list[float]] = {}

    class Timed(torch.fx.Interpreter):
        """Runs the graph; on the CPU, times each captured node's call alone (its arguments
        fetched first); on CUDA, marks it with a profiler range."""

        timing = False

        def run_node(self, n: torch.fx.Node) -> Any:
            if n.name not in labels or n.op != "call_function":
                return super().run_node(n)
            if dev == "cuda":
                with record_function(LABEL + labels[n.name]):
                    return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            t0 = time.perf_counter()
            result = n.target(*args, **kwargs)
            if self.timing:
                samples.setdefault(labels[n.name], []).append(time.perf_counter() - t0)
            return result

    def run(timing: bool) -> None:
        interpreter = Timed(module, garbage_collect_values=True)
        interpreter.timing = timing
        with torch.no_grad():
            interpreter.run(*args)

    for _ in range(warmup):
        run(False)
    if dev == "cpu":
        for _ in range(repeats):
            run(True)
    else:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(repeats):
                run(True)
            torch.cuda.synchronize()
        for e in prof.events():
            if e.name.startswith(LABEL) and e.device_type == torch.autograd.DeviceType.CPU:
                samples.setdefault(e.name[len(LABEL) :], []).append(e.device_time_total * 1e-6)
    unsupported = {u["node"] for u in lowered.unsupported}
    node_kernels, node_tensors = lowered.node_kernels, lowered.node_tensors
    nodes = []
    for node in cap.document["nodes"]:
        name = node["name"]
        if name not in samples:
            raise ValueError(f"node '{name}' was not timed (no profiler range for it)")
        nodes.append(
            {
                "node": name,
                "op": node["op"],
                "measured_s": statistics.median(samples[name]),
                "lowered": name not in unsupported,
                "kernels": node_kernels.get(name, []),
                "tensors": node_tensors.get(name, []),
            }
        )
    if dev == "cuda":
        how = "torch.profiler: CUDA kernel time of each node's record_function range"
    else:
        how = f"wall clock of each node's call, {torch.get_num_threads()} thread(s)"
    method = f"{how}, {warmup} warm-up runs, median of {repeats} runs of the captured graph"
    return {"device": local_device_name(dev), "method": method, "nodes": nodes}


def write_node_times(document: dict, path: str | os.PathLike) -> None:
    """Writes a ``--measured-nodes`` document (atomically)."""
    from solar._files import write_atomic

    write_atomic(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
