"""Capture of one training step of a JAX program (docs/training.md, "JAX"): ``jax.value_and_grad``
of the loss with respect to the model's parameters, as one capture document whose nodes are
tagged ``forward`` or ``backward``.

1. The loss: ``loss_fn(output, *inputs)`` (a model file's ``get_loss``; default: the sum of every
   floating-point output), a floating-point scalar.
2. The parameters: a Flax nnx Model's ``nnx.Param`` variables, a linen Model's ``params``
   collection (``batch_stats`` and other state are read, not differentiated). A plain
   ``forward(*inputs)`` file has no parameters (its arguments are inputs: docs/jax.md): nothing to
   train, a one-line error.
3. The step ``(loss, *grads) = jax.value_and_grad(loss_of_params)(params)`` is captured as any JAX
   program (``jax.make_jaxpr``, the walk of ``_capture``). Its outputs are renamed ``loss`` and
   ``grad_<parameter>``.
4. Phases, as for PyTorch: a node the loss depends on is ``forward``; every other node (the seed
   gradient onwards, and what JAX's linearization computes only for the backward) is
   ``backward``. The forward nodes are moved before the backward ones (a forward node reads only
   forward nodes, so the order stays topological).

5. The optimizer (``sgd``, ``adam``, ``adamw``): the update of every parameter appended to the
   step as JAX operations, the formulas and hyperparameters of PyTorch's (``solar.torch._train``,
   docs/training.md): SGD ``p - lr g``; Adam(W) at step ``STEP``: ``p (1 - lr wd)`` (AdamW),
   ``m + (g - m)(1 - b1)``, ``v b2 + g g (1 - b2)``, ``p - (m / (sqrt(v) / sqrt(1 - b2^t) +
   eps)) lr / (1 - b1^t)``. The moments are new leaves ``s_<param>_exp_avg``,
   ``s_<param>_exp_avg_sq`` (role ``buffer``, initial values ``initial_state``); the new values
   are outputs ``new_<param>``, ``new_<param>_exp_avg``, ``new_<param>_exp_avg_sq``. A node that
   neither the loss nor a gradient depends on is ``optimizer``.

Verification: the golden run is ``jax.jit`` of the same step on the same values: the loss and
gradients of JAX's own ``value_and_grad`` (and the update computed by XLA; the tests check it
against optax's ``sgd``/``adam``/``adamw``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solar.jax._capture import CaptureError, Leaf, flatten
from solar.options import check_optimizer

# PyTorch's defaults, as solar.torch._train.HYPERPARAMETERS (that module imports torch).
HYPERPARAMETERS = {
    "sgd": {"lr": 1e-3},
    "adam": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0},
    "adamw": {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 1e-2},
}
STEP = 10  # the step analysed: Adam's state is that after STEP - 1 steps
STATES = ("exp_avg", "exp_avg_sq")


def initial_state(value: Any, state: str) -> np.ndarray:
    """The optimizer state the step starts from (after STEP - 1 steps): deterministic, seeded by
    the parameter's size: ``exp_avg`` ~ 0.1 N(0, 1), ``exp_avg_sq`` ~ 0.01 U(0, 1)."""
    rng = np.random.default_rng(1 + int(np.prod(value.shape)))
    dtype = np.asarray(value).dtype
    if state == "exp_avg":
        return (0.1 * rng.standard_normal(value.shape)).astype(dtype)
    return (0.01 * rng.random(value.shape)).astype(dtype)


def update(optimizer: str, p: Any, g: Any, m: Any = None, v: Any = None) -> list:
    """``[new_p]`` (SGD) or ``[new_p, new_m, new_v]`` (Adam, AdamW): module doc, item 5."""
    h = HYPERPARAMETERS[optimizer]
    if optimizer == "sgd":
        return [p - g * h["lr"]]
    beta1, beta2 = h["betas"]
    lr, eps, wd = h["lr"], h["eps"], h["weight_decay"]
    if wd:
        p = p * (1.0 - lr * wd)
    m1 = m + (g - m) * (1 - beta1)
    v1 = v * beta2 + g * g * (1 - beta2)
    bias1, bias2 = 1.0 - beta1**STEP, 1.0 - beta2**STEP
    denom = jnp.sqrt(v1) / bias2**0.5 + eps
    return [p - (m1 / denom) * (lr / bias1), m1, v1]


def trainable(weights: Any, leaves: list[Leaf]) -> list[bool]:
    """Per weight leaf (``tree_flatten`` order): whether it is a parameter to differentiate."""
    n = len(jax.tree_util.tree_leaves(weights))
    mask = [leaf.role == "weight" for leaf in leaves[:n]]
    try:
        from flax import nnx
    except ImportError:
        nnx = None
    if nnx is not None and isinstance(weights, nnx.State):
        variables = jax.tree_util.tree_leaves(
            weights, is_leaf=lambda v: isinstance(v, nnx.Variable)
        )
        if len(variables) == n:
            mask = [isinstance(v, nnx.Param) for v in variables]
    elif isinstance(weights, dict) and weights:
        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(weights)[0]]
        mask = [bool(p) and _first_key(p) == "params" for p in paths]
    return [
        m and jnp.issubdtype(np.asarray(leaf.value).dtype, jnp.floating)
        for m, leaf in zip(mask, leaves[:n], strict=True)
    ]


def _first_key(path: tuple) -> str:
    k = path[0]
    return str(getattr(k, "key", getattr(k, "name", k)))


def default_loss(output: Any, *inputs: Any) -> Any:
    """The sum of every floating-point array of ``output`` (pytree leaves)."""
    leaves = [x for x in jax.tree_util.tree_leaves(output) if hasattr(x, "dtype")]
    leaves = [x for x in leaves if jnp.issubdtype(x.dtype, jnp.floating)]
    if not leaves:
        raise CaptureError("--train: the model returns no floating-point array to sum as the loss")
    total = jnp.sum(leaves[0])
    for x in leaves[1:]:
        total = total + jnp.sum(x)
    return total


def _loss_value(loss_fn: Any, output: Any, inputs: list) -> Any:
    try:
        loss = loss_fn(output, *inputs)
    except CaptureError:
        raise
    except Exception as e:  # noqa: BLE001 - the file's own error, one line
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CaptureError(f"get_loss failed: {type(e).__name__}: {text}".rstrip(": ")) from e
    if not hasattr(loss, "shape") or not hasattr(loss, "dtype"):
        raise CaptureError(f"get_loss returned {type(loss).__name__}, not an array")
    if int(np.prod(loss.shape)) != 1 or not jnp.issubdtype(loss.dtype, jnp.floating):
        raise CaptureError(
            f"get_loss returned a {np.dtype(loss.dtype).name} array of shape {list(loss.shape)},"
            " not a floating-point scalar"
        )
    return loss if loss.shape == () else jnp.reshape(loss, ())


def train_capture(
    call: Any,
    leaves: list[Leaf],
    mask: list[bool],
    loss_fn: Any,
    source: str | None,
    optimizer: str | None = None,
) -> tuple[Any, Any, list[Leaf]]:
    """``(flattened, step, leaves)``: the capture of the training step (module doc) of
    ``call(*flat) -> (output, inputs)`` over ``leaves``, differentiating the weight leaves
    ``mask`` selects; the step function itself (``step(*flat) -> [loss, *grads, *updates]``, the
    golden run's) and its leaves (``leaves`` and the optimizer's states)."""
    params = [i for i, m in enumerate(mask) if m]
    if not params:
        raise CaptureError(
            "--train: the model has no parameters to differentiate (a JAX model file's"
            " parameters are a Flax Model's: nnx.Param variables or linen's 'params';"
            " forward(*inputs) takes only inputs; docs/training.md)"
        )
    check_optimizer(optimizer)
    loss_fn = default_loss if loss_fn is None else loss_fn
    n = len(leaves)
    stateful = optimizer in ("adam", "adamw")
    all_leaves = list(leaves)
    if stateful:
        for i in params:
            for state in STATES:
                value = initial_state(leaves[i].value, state)
                all_leaves.append(Leaf(f"s_{leaves[i].name}_{state}", "buffer", value))

    def step(*flat: Any) -> list:
        def loss_of(diff: list) -> Any:
            full = list(flat[:n])
            for i, d in zip(params, diff, strict=True):
                full[i] = d
            output, inputs = call(*full)
            return _loss_value(loss_fn, output, inputs)

        loss, grads = jax.value_and_grad(loss_of)([flat[i] for i in params])
        updates: list = []
        for k, (i, g) in enumerate(zip(params, grads, strict=True)):
            if optimizer == "sgd":
                updates += update(optimizer, flat[i], g)
            elif stateful:
                m, v = flat[n + 2 * k], flat[n + 2 * k + 1]
                updates += update(optimizer, flat[i], g, m, v)
        return [loss, *grads, *updates]

    flat = flatten(step, all_leaves, source)
    doc = flat.document
    _tag_phases(doc, len(params))
    renames = {doc["outputs"][0]: "loss"}
    for k, i in enumerate(params):
        renames[doc["outputs"][1 + k]] = "grad_" + leaves[i].name
    at = 1 + len(params)
    if optimizer is not None:
        suffixes = [""] + ([f"_{s}" for s in STATES] if stateful else [])
        for i in params:
            for suffix in suffixes:
                renames[doc["outputs"][at]] = f"new_{leaves[i].name}{suffix}"
                at += 1
    _rename(flat, renames)
    return flat, step, all_leaves


def _tag_phases(doc: dict, n_grads: int) -> None:
    """``forward``: the nodes the loss depends on; ``backward``: the other nodes a gradient
    depends on; ``optimizer``: the rest (the update). Nodes are reordered by phase (each phase
    reads only its own and earlier phases, so the order stays topological)."""
    producer = {o: node for node in doc["nodes"] for o in node["outputs"]}
    phase: dict[int, str] = {}

    def mark(roots: list[str], name: str) -> None:
        stack = [producer[r] for r in roots if r in producer]
        while stack:
            node = stack.pop()
            if id(node) in phase:
                continue
            phase[id(node)] = name
            stack.extend(producer[r] for r in _refs(node["args"]) if r in producer)

    mark(doc["outputs"][:1], "forward")
    mark(doc["outputs"][1 : 1 + n_grads], "backward")
    for node in doc["nodes"]:
        node["phase"] = phase.get(id(node), "optimizer")
    order = ("forward", "backward", "optimizer")
    doc["nodes"] = [node for p in order for node in doc["nodes"] if node["phase"] == p]


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "tensor" in value:
            return [value["tensor"]]
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def _rename(flat: Any, renames: dict[str, str]) -> None:
    """Renames tensors of the document (a wanted name already taken gets ``_1``, ...)."""
    doc = flat.document
    used = {t["name"] for t in doc["tensors"]} | {n["name"] for n in doc["nodes"]}
    final: dict[str, str] = {}
    for old, wanted in renames.items():
        used.discard(old)
        name, k = wanted, 0
        while name in used:
            k += 1
            name = f"{wanted}_{k}"
        used.add(name)
        final[old] = name

    def sub(value: Any) -> Any:
        if isinstance(value, dict):
            if "tensor" in value and len(value) == 1:
                return {"tensor": final.get(value["tensor"], value["tensor"])}
            return {k: sub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [sub(v) for v in value]
        return value

    for t in doc["tensors"]:
        t["name"] = final.get(t["name"], t["name"])
    for node in doc["nodes"]:
        if node["name"] in final and node["outputs"] and node["outputs"][0] == node["name"]:
            node["name"] = final[node["name"]]
        node["outputs"] = [final.get(o, o) for o in node["outputs"]]
        node["args"] = sub(node["args"])
    doc["outputs"] = [final.get(o, o) for o in doc["outputs"]]
    if flat.draws is not None:
        flat.draws.outputs = [[final.get(o, o) for o in names] for names in flat.draws.outputs]
