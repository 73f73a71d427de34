"""Translation tasks: what the agent is asked to translate, with the golden data that verifies it
(docs/llm.md, "The contract").

- ``program_task(path)``: a whole model file, as ``solar analyze`` reads it. PyTorch (``class
  Model``, ``get_inputs()``, ``get_init_inputs()``): inputs ``in0..`` are the tensors of
  ``get_inputs()`` flattened in order, weights the ``state_dict()`` entries named with '.'
  replaced by '_', outputs ``out0..`` the tensors the call returns, flattened. JAX (a file that
  imports jax or flax, docs/jax.md: ``forward(*get_inputs())`` or a Flax ``Model``): the same,
  with the Flax variables as weights, named as ``solar.jax`` names them (``Dense_0_kernel``).
- ``op_task(document, node)``: one node of a capture document, run by itself in PyTorch on seeded
  random inputs of its shapes and dtypes.
"""

from __future__ import annotations

import json
import os

import numpy as np

from solar.llm.agent import Task
from solar.llm.config import LLMError
from solar.llm.prompt import Tensor, op_prompt, program_prompt


def program_task(path: str | os.PathLike) -> tuple[Task, str]:
    """The task of translating a model file, and its framework ("PyTorch" or "JAX")."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise LLMError(f"{path}: no such file")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    from solar._modelfile import framework_of

    framework = "JAX" if framework_of(path) == "jax" else "PyTorch"
    try:
        inputs, weights, outputs = _program_data(path, framework)
    except ValueError:  # LLMError, CaptureError: one line already
        raise
    except Exception as e:  # the model's own code failed
        message = " ".join(str(e).split())
        raise LLMError(f"{path}: running the model failed: {type(e).__name__}: {message}") from e
    filename = os.path.basename(path)
    ins = [_tensor(f"in{i}", dtype, a) for i, (dtype, a) in enumerate(inputs)]
    ws = [_tensor(name, dtype, a, origin) for name, origin, dtype, a in weights]
    outs = [_tensor(f"out{i}", dtype, a) for i, (dtype, a) in enumerate(outputs)]
    feed = {t.name: a for t, (_, a) in zip(ins, inputs, strict=True)}
    feed.update({t.name: w[3] for t, w in zip(ws, weights, strict=True)})
    task = Task(
        label=filename,
        messages=program_prompt(source, filename, framework, ins, ws, outs),
        feed=feed,
        expected={t.name: (t.dtype, a) for t, (_, a) in zip(outs, outputs, strict=True)},
        key={
            "kind": "program",
            "framework": framework,
            "source": source,
            "contract": [[t.name, t.dtype, list(t.shape)] for t in ins + ws + outs],
        },
        feed_dtypes={t.name: t.dtype for t in ins + ws},
    )
    return task, framework


def _tensor(name: str, dtype: str, a: np.ndarray, origin: str = "") -> Tensor:
    return Tensor(name, dtype, tuple(int(s) for s in a.shape), origin)


def _program_data(path: str, framework: str) -> tuple[list, list, list]:
    """(inputs, weights, outputs) of a model file, run once for real by its framework's adapter
    (``solar.torch.program_data``, ``solar.jax.program_data``): inputs and outputs as (dtype,
    array), weights as (IR name, state_dict key or Flax path, dtype, array)."""
    if framework == "JAX":
        try:
            from solar import jax as solar_jax
        except ImportError as e:
            raise LLMError(f"translating a JAX model file needs jax and flax: {e}") from None
        return solar_jax.program_data(path)
    from solar import torch as solar_torch

    inputs, weights, outputs = solar_torch.program_data(path)
    if not outputs:
        raise LLMError(f"{path}: the model returns no tensor")
    return inputs, weights, outputs


# ---------------------------------------------------------------------------------------------
# One operator of a capture


def op_task(document: dict, node: dict, seed: int = 0) -> tuple[Task, list[str], list[str]]:
    """The task of translating one capture node, run by itself in PyTorch on seeded random
    inputs (``solar.torch.op_run.run_op``); also the capture tensors bound to the program's
    inputs (in0..) and outputs (out0..).

    Float inputs are standard normal, integer inputs uniform in 0..3, bool inputs random."""
    from solar.torch.op_run import run_op

    op_name = node["op"]
    tensors = {t["name"]: t for t in document["tensors"]}
    run = run_op(document, node, seed)
    bound, out_names = run.bound, run.out_names
    ins = [
        Tensor(f"in{i}", tensors[n]["dtype"], tuple(tensors[n]["shape"]), f"capture tensor {n}")
        for i, n in enumerate(bound)
    ]
    outs = [
        Tensor(f"out{i}", tensors[n]["dtype"], tuple(tensors[n]["shape"]), f"capture tensor {n}")
        for i, n in enumerate(out_names)
    ]
    expected = {}
    for t, v in zip(outs, run.outputs, strict=True):
        if tuple(v.shape) != t.shape:
            raise LLMError(
                f"{op_name}: output shape {list(v.shape)} is not the capture's {list(t.shape)}"
            )
        expected[t.name] = (t.dtype, v)
    args_for_key = json.dumps(node["args"], sort_keys=True)
    for i, name in enumerate(bound):  # the key names inputs by position, not by capture name
        args_for_key = args_for_key.replace(json.dumps({"tensor": name}), f'"<in{i}>"')
    task = Task(
        label=f"node '{node['name']}' ({op_name})",
        messages=op_prompt(op_name, run.schema, run.lines, ins, outs),
        feed={t.name: run.inputs[n] for t, n in zip(ins, bound, strict=True)},
        expected=expected,
        key={
            "kind": "op",
            "op": op_name,
            "schema": run.schema,
            "args": args_for_key,
            "contract": [[t.name, t.dtype, list(t.shape)] for t in ins + outs],
        },
        feed_dtypes={t.name: t.dtype for t in ins},
    )
    return task, bound, out_names
