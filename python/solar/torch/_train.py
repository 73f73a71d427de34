"""Capture of one training step (docs/training.md): the joint forward + backward graph of a loss,
and optionally an optimizer's update of every parameter, as one Core ATen FX graph whose nodes
are tagged ``forward``, ``backward`` or ``optimizer``.

1. The model's forward is wrapped to return the loss, ``loss_fn(output, *inputs)`` (a model
   file's ``get_loss``; default: the sum of every floating-point output), and exported
   (``torch.export.export``).
2. The joint graph: torch.export's forward-backward path (``_decompose_exported_program`` with
   ``joint_loss_index=0``, the machinery of ``torch.export.experimental._export_forward_backward``)
   with no decompositions, so backward ops are whole (``native_layer_norm_backward``), then
   ``run_decompositions`` with SOLAR's table, which records each piece's origin (the lowering
   writes one ``op`` block per origin: eager runs a layer norm's backward as one kernel).
   Attention (``_scaled_dot_product_flash_attention_for_cpu`` and its backward) is kept whole:
   the rules lower the fused kernels' work.
3. Phases: a node the loss or a buffer's new value depends on is ``forward``; every other node
   (the seed gradient onwards) is ``backward``. ``alias`` and ``detach`` (identities, the saved
   tensors' handles) are removed.
4. The optimizer (``sgd``, ``adam``, ``adamw``): its update of every parameter written as aten
   nodes appended to the graph (phase ``optimizer``), reading the parameter, its gradient and
   its state (Adam's two moments, new graph inputs of role ``buffer``) and writing their new
   values (graph outputs). Hyperparameters are PyTorch's defaults (``HYPERPARAMETERS``); the
   step analysed is ``STEP`` (its bias corrections are constants).

Verification (``TrainCapture.golden``): PyTorch's autograd on the real model and inputs
(``loss.backward()``), then ``torch.optim`` (``foreach=False``) from the same state, give the
loss, every gradient and every new parameter and state that SOLAR's executor must reproduce.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from solar import options
from solar.torch._trace import (
    Binding,
    CaptureError,
    Traced,
    _aten,
    _bodies_interpreted,
    _decompositions,
    _first_line,
    _FunctionModule,
    exported_placeholders,
)

# PyTorch's defaults (torch.optim.SGD needs a learning rate: 1e-3, as Adam's).
HYPERPARAMETERS = {
    "sgd": {"lr": 1e-3},
    "adam": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0},
    "adamw": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2},
}
STEP = 10  # the step analysed: Adam's state is that after STEP - 1 steps
STATES = {"sgd": (), "adam": ("exp_avg", "exp_avg_sq"), "adamw": ("exp_avg", "exp_avg_sq")}
# Attention is kept whole in training, forward and backward (their rules: docs/lowering.md).
_KEPT_IN_TRAINING = (
    "_scaled_dot_product_flash_attention_for_cpu.default",
    "_scaled_dot_product_flash_attention_for_cpu_backward.default",
)
_IDENTITIES = ("alias.default", "detach.default")


def default_loss(output: Any, *inputs: Any) -> torch.Tensor:
    """The sum of every floating-point tensor of ``output`` (pytree leaves)."""
    from torch.utils import _pytree as pytree

    leaves = [t for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    leaves = [t for t in leaves if t.is_floating_point()]
    if not leaves:
        raise CaptureError("--train: the model returns no floating-point tensor to sum as the loss")
    total = leaves[0].sum()
    for t in leaves[1:]:
        total = total + t.sum()
    return total


check_optimizer = options.check_optimizer  # the optimizers: solar.options.OPTIMIZERS


def trainable(module: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in module.named_parameters() if p.requires_grad]


class _LossError(Exception):
    """The loss function failed or gave no scalar (raised through torch.export)."""


def _loss_value(loss_fn: Any, output: Any, args: tuple) -> torch.Tensor:
    try:
        loss = loss_fn(output, *args)
    except CaptureError:
        raise
    except Exception as e:
        raise _LossError(f"get_loss failed: {type(e).__name__}: {_first_line(str(e))}") from e
    if not isinstance(loss, torch.Tensor):
        raise _LossError(f"get_loss returned {type(loss).__name__}, not a tensor")
    if loss.numel() != 1 or not loss.is_floating_point():
        raise _LossError(
            f"get_loss returned a {str(loss.dtype).removeprefix('torch.')} tensor of shape "
            f"{list(loss.shape)}, not a floating-point scalar"
        )
    return loss.reshape(())


def trace_train(model: Any, args: tuple, loss_fn: Any = None, optimizer: str | None = None):
    """The training step of ``model(*args)`` (module docstring) as a ``Traced`` whose
    ``phases`` tag every call node."""
    check_optimizer(optimizer)
    module = model if isinstance(model, nn.Module) else _FunctionModule(model)
    if not trainable(module):
        raise CaptureError(
            "--train: the model has no parameters that require a gradient (nothing to train)"
        )
    loss_fn = default_loss if loss_fn is None else loss_fn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)
        ep = _export_loss(module, args, loss_fn)
        traced = _joint(ep)
    if optimizer is not None:
        _append_optimizer(traced, optimizer)
    _name_outputs(traced)
    return traced


def _export_loss(module: nn.Module, args: tuple, loss_fn: Any) -> Any:
    original = module.forward

    def forward(*call_args: Any, **kwargs: Any) -> Any:
        return _loss_value(loss_fn, original(*call_args, **kwargs), call_args)

    try:
        forward.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    had_own = "forward" in module.__dict__
    module.forward = forward
    try:
        return torch.export.export(module, args)
    except Exception as e:
        cause: BaseException | None = e
        while cause is not None:  # export may wrap the loss function's own error
            if isinstance(cause, (_LossError, CaptureError)):
                raise CaptureError(str(cause)) from e
            cause = cause.__cause__ or cause.__context__
        text = str(e)
        if "get_loss" in text:
            raise CaptureError(_first_line(text)) from e
        raise CaptureError(
            f"capture failed: torch.export of the loss: {type(e).__name__}: {_first_line(text)}"
        ) from e
    finally:
        if had_own:
            module.forward = original
        else:
            del module.forward


def _joint(ep: Any) -> Traced:
    from torch.export.exported_program import _decompose_exported_program
    from torch.export.graph_signature import OutputKind

    try:
        with _bodies_interpreted(ep.graph_module):  # no_grad/autocast bodies: their own ops
            joint = _decompose_exported_program(
                ep,
                cia_to_decomp={},
                python_decomp_table={},
                joint_loss_index=0,
                decompose_custom_triton_ops=False,
            )
        table = _decompositions()
        for name in _KEPT_IN_TRAINING:
            table.pop(_aten(name), None)
        with _bodies_interpreted(joint.graph_module):
            joint = joint.run_decompositions(table)
    except Exception as e:
        raise CaptureError(
            f"capture failed: the joint forward-backward graph: {type(e).__name__}: "
            f"{_first_line(str(e))}"
        ) from e
    graph = joint.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in [_aten(n) for n in _IDENTITIES]:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    sig = joint.graph_signature
    traced = Traced(graph=graph, method="torch.export", module=joint.graph_module)
    traced.placeholders.update(exported_placeholders(sig, joint.constants))
    output_node = next(n for n in graph.nodes if n.op == "output")
    values = list(output_node.args[0])
    forward_roots = []
    for spec, value in zip(sig.output_specs, values, strict=True):
        if spec.kind == OutputKind.LOSS_OUTPUT:
            traced.outputs.append((value, Binding("output", index=0)))
            forward_roots.append(value)
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            traced.outputs.append((value, Binding("buffer_mutation", target=spec.target)))
            forward_roots.append(value)
        elif spec.kind == OutputKind.GRADIENT_TO_PARAMETER:
            traced.outputs.append((value, Binding("gradient", target=spec.target)))
        elif spec.kind == OutputKind.GRADIENT_TO_USER_INPUT:  # an input that requires grad
            name = _input_of_gradient(spec.target, sig.input_specs)
            index = traced.placeholders[name].index
            traced.outputs.append((value, Binding("input_gradient", index=index, target=name)))
        else:
            raise CaptureError(f"unsupported exported output kind {spec.kind.name}")
    order = {"output": 0, "buffer_mutation": 1, "gradient": 2, "input_gradient": 3}
    traced.outputs.sort(key=lambda item: order[item[1].kind])
    forward: set[str] = set()
    stack = [v for v in forward_roots if isinstance(v, torch.fx.Node)]
    while stack:
        node = stack.pop()
        if node.name in forward:
            continue
        forward.add(node.name)
        stack.extend(node.all_input_nodes)
    for node in graph.nodes:
        if node.op == "call_function":
            traced.phases[node.name] = "forward" if node.name in forward else "backward"
    output_node.args = (tuple(v for v, _ in traced.outputs),)
    graph.eliminate_dead_code()
    return traced


@dataclass
class _Origin:
    """A ``node.meta["from_node"]`` entry (what ``_serialize._origin`` reads): the framework
    operation a group of update nodes stands for, so the lowering writes them as one ``op``
    block: eager runs ``exp_avg.lerp_(grad, w)`` as one kernel, not three."""

    name: str
    target: str


def _input_of_gradient(target: str, input_specs: list) -> str:
    """The placeholder a GRADIENT_TO_USER_INPUT output is for: its target is the input's name,
    or (torch 2.13) AOT autograd's ``arg<N>_1``, the N-th input of the graph."""
    names = [getattr(spec.arg, "name", None) for spec in input_specs]
    if target in names:
        return target
    match = re.fullmatch(r"arg(\d+)_1", target)
    if match and int(match.group(1)) < len(names) and names[int(match.group(1))]:
        return names[int(match.group(1))]
    raise CaptureError(f"the gradient of input '{target}' names no input of the graph")


class _Emitter:
    """Appends aten nodes to a graph before its output, each with a ``val`` (a meta tensor of
    the result's shape and dtype), the phase ``optimizer`` and, inside ``group``, an origin."""

    def __init__(self, traced: Traced) -> None:
        self.traced = traced
        self.graph = traced.graph
        self.output = next(n for n in self.graph.nodes if n.op == "output")
        self.origin: _Origin | None = None

    def __call__(self, op: Any, *args: Any) -> torch.fx.Node:
        meta_args = [a.meta["val"].to("meta") if isinstance(a, torch.fx.Node) else a for a in args]
        val = op(*meta_args)
        with self.graph.inserting_before(self.output):
            node = self.graph.call_function(op, tuple(args))
        node.meta["val"] = val
        if self.origin is not None:
            node.meta["from_node"] = [self.origin]
        self.traced.phases[node.name] = "optimizer"
        return node

    @contextlib.contextmanager
    def group(self, name: str, target: str):
        self.origin = _Origin(name, target)
        try:
            yield
        finally:
            self.origin = None


def _append_optimizer(traced: Traced, optimizer: str) -> None:
    """The update of every parameter that has a gradient (module docstring), for ``optimizer``,
    as torch.optim's single-tensor path runs it (``foreach=False``), one ``op`` block per
    in-place call: SGD ``p.add_(g, alpha=-lr)``; Adam(W) at step ``STEP``: ``p.mul_(1 - lr *
    wd)`` (AdamW), ``m.lerp_(g, 1 - b1)``, ``v.mul_(b2).addcmul_(g, g, value=1 - b2)``, ``denom
    = (v.sqrt() / sqrt(1 - b2^t)).add_(eps)``, ``p.addcdiv_(m, denom, value=-lr / (1 - b1^t))``
    (8 kernels a parameter)."""
    graph = traced.graph
    aten = torch.ops.aten
    h = HYPERPARAMETERS[optimizer]
    param_nodes = {b.target: name for name, b in traced.placeholders.items() if b.kind == "weight"}
    by_name = {n.name: n for n in graph.nodes}
    grads = [(v, b.target) for v, b in traced.outputs if b.kind == "gradient"]
    first_op = next(n for n in graph.nodes if n.op != "placeholder")
    emit = _Emitter(traced)
    new_outputs = []
    for grad, target in grads:
        p = by_name[param_nodes[target]]
        stem = target.replace(".", "_")
        if optimizer == "sgd":
            with emit.group(f"{stem}_add_", "aten.add_.Tensor"):
                new_p = emit(aten.sub.Tensor, p, emit(aten.mul.Tensor, grad, h["lr"]))
            new_outputs.append((new_p, Binding("param_update", target=target)))
            continue
        states = []
        for state in STATES[optimizer]:
            with graph.inserting_before(first_op):
                node = graph.placeholder(f"s_{stem}_{state}")
            node.meta["val"] = p.meta["val"]
            traced.placeholders[node.name] = Binding("optimizer_state", target=target, value=state)
            states.append(node)
        m, v = states
        beta1, beta2 = h["betas"]
        lr, eps, wd = h["lr"], h["eps"], h["weight_decay"]
        if wd:
            p = emit(aten.mul.Tensor, p, 1.0 - lr * wd)  # AdamW: decoupled weight decay
        with emit.group(f"{stem}_lerp_", "aten.lerp_.Scalar"):  # m + (g - m) * (1 - beta1)
            m1 = emit(
                aten.add.Tensor,
                m,
                emit(aten.mul.Tensor, emit(aten.sub.Tensor, grad, m), 1 - beta1),
            )
        v_scaled = emit(aten.mul.Tensor, v, beta2)
        with emit.group(f"{stem}_addcmul_", "aten.addcmul_.default"):
            g2 = emit(aten.mul.Tensor, grad, grad)
            v1 = emit(aten.add.Tensor, v_scaled, emit(aten.mul.Tensor, g2, 1 - beta2))
        bias1 = 1.0 - beta1**STEP
        bias2 = 1.0 - beta2**STEP
        denom = emit(
            aten.add.Tensor, emit(aten.div.Tensor, emit(aten.sqrt.default, v1), bias2**0.5), eps
        )
        with emit.group(f"{stem}_addcdiv_", "aten.addcdiv_.default"):
            update = emit(aten.mul.Tensor, emit(aten.div.Tensor, m1, denom), lr / bias1)
            new_p = emit(aten.sub.Tensor, p, update)
        new_outputs.append((new_p, Binding("param_update", target=target)))
        new_outputs.append((m1, Binding("state_update", target=target, value="exp_avg")))
        new_outputs.append((v1, Binding("state_update", target=target, value="exp_avg_sq")))
    traced.outputs.extend(new_outputs)
    output_node = emit.output
    output_node.args = (tuple(v for v, _ in traced.outputs),)


def _name_outputs(traced: Traced) -> None:
    """Readable names for the step's outputs: ``loss``, ``grad_<param>``, ``new_<param>``,
    ``new_<param>_<state>`` (FX renames on a clash)."""
    prefix = {
        "output": "loss",
        "gradient": "grad_",
        "input_gradient": "grad_",
        "param_update": "new_",
        "state_update": "new_",
    }
    for value, b in traced.outputs:
        if b.kind not in prefix or value.op != "call_function":
            continue
        name = prefix[b.kind] + b.target.replace(".", "_")
        if b.kind == "output":
            name = "loss"
        elif b.kind == "state_update":
            name += "_" + b.value
        phase = traced.phases.pop(value.name)
        value._rename(name)
        traced.phases[value.name] = phase


def initial_state(param: torch.Tensor, state: str) -> torch.Tensor:
    """The optimizer state verification starts from (after STEP - 1 steps): deterministic,
    seeded by the parameter's shape: ``exp_avg`` ~ 0.1 N(0, 1), ``exp_avg_sq`` ~ 0.01 U(0, 1)
    (non-negative, as a mean of squares)."""
    gen = torch.Generator().manual_seed(1 + param.numel())
    shape, dtype = param.shape, param.dtype
    if state == "exp_avg":
        return (0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)).to(dtype)
    return (0.01 * torch.rand(shape, generator=gen, dtype=torch.float64)).to(dtype)


def golden_step(
    model: Any, inputs: tuple, loss_fn: Any, optimizer: str | None, traced: Traced
) -> dict[str, Any]:
    """PyTorch's run of the step on real tensors, by FX name: every placeholder's value before
    the step, the loss, each gradient (``loss.backward()``), each buffer's new value, and with an
    optimizer each parameter's and state's new value (``torch.optim``, foreach=False)."""
    from torch.utils import _pytree as pytree

    module = model if isinstance(model, nn.Module) else _FunctionModule(model)
    loss_fn = default_loss if loss_fn is None else loss_fn
    flat_inputs = list(pytree.tree_leaves(inputs))
    values: dict[str, Any] = {}
    states: dict[tuple[str, str], torch.Tensor] = {}
    for fx_name, b in traced.placeholders.items():
        if b.kind == "input":
            values[fx_name] = flat_inputs[b.index].detach().clone()
        elif b.kind == "weight":
            values[fx_name] = module.get_parameter(b.target).detach().clone()
        elif b.kind == "buffer":
            values[fx_name] = module.get_buffer(b.target).detach().clone()
        elif b.kind == "optimizer_state":
            state = initial_state(module.get_parameter(b.target), b.value)
            states[(b.target, b.value)] = state
            values[fx_name] = state.clone()
        else:
            values[fx_name] = b.value
    module.zero_grad(set_to_none=True)
    for t in flat_inputs:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            t.grad = None
    loss = _loss_value(loss_fn, module(*inputs), tuple(inputs))
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}
    if optimizer is not None:
        _torch_step(module, optimizer, states)
    for value, b in traced.outputs:
        name = value.name
        if b.kind == "output":
            values[name] = loss.detach().reshape(())
        elif b.kind == "gradient":
            values[name] = grads[b.target]
        elif b.kind == "input_gradient":
            values[name] = flat_inputs[b.index].grad.detach().clone()
        elif b.kind == "buffer_mutation":
            values[name] = module.get_buffer(b.target).detach().clone()
        elif b.kind == "param_update":
            values[name] = module.get_parameter(b.target).detach().clone()
        elif b.kind == "state_update":
            values[name] = states[(b.target, b.value)].detach().clone()
    module.zero_grad(set_to_none=True)
    return values


def _torch_step(module: nn.Module, optimizer: str, states: dict) -> None:
    params = [p for _, p in module.named_parameters() if p.grad is not None]
    h = dict(HYPERPARAMETERS[optimizer])
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=h["lr"], foreach=False)
    else:
        cls = torch.optim.AdamW if optimizer == "adamw" else torch.optim.Adam
        opt = cls(params, foreach=False, **h)
        for name, p in module.named_parameters():
            if p.grad is None:
                continue
            opt.state[p] = {
                "step": torch.tensor(float(STEP - 1)),
                "exp_avg": states[(name, "exp_avg")],
                "exp_avg_sq": states[(name, "exp_avg_sq")],
            }
    with torch.no_grad():
        opt.step()


__all__ = [
    "STEP",
    "HYPERPARAMETERS",
    "default_loss",
    "golden_step",
    "trace_train",
]
