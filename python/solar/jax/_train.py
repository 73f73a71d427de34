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

Verification: the golden run is ``jax.jit`` of the same step on the same values: the loss and
gradients of JAX's own ``value_and_grad``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solar.jax._capture import CaptureError, Leaf, flatten


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
    call: Any, leaves: list[Leaf], mask: list[bool], loss_fn: Any, source: str | None
) -> tuple[Any, Any]:
    """``(flattened, step)``: the capture of the training step (module doc) of ``call(*flat) ->
    (output, inputs)`` over ``leaves``, differentiating the weight leaves ``mask`` selects, and
    the step function itself (``step(*flat) -> [loss, *grads]``, the golden run's)."""
    params = [i for i, m in enumerate(mask) if m]
    if not params:
        raise CaptureError(
            "--train: the model has no parameters to differentiate (a JAX model file's"
            " parameters are a Flax Model's: nnx.Param variables or linen's 'params';"
            " forward(*inputs) takes only inputs; docs/training.md)"
        )
    loss_fn = default_loss if loss_fn is None else loss_fn

    def step(*flat: Any) -> list:
        def loss_of(diff: list) -> Any:
            full = list(flat)
            for i, d in zip(params, diff, strict=True):
                full[i] = d
            output, inputs = call(*full)
            return _loss_value(loss_fn, output, inputs)

        loss, grads = jax.value_and_grad(loss_of)([flat[i] for i in params])
        return [loss, *grads]

    flat = flatten(step, leaves, source)
    doc = flat.document
    _tag_phases(doc)
    renames = {doc["outputs"][0]: "loss"}
    for k, i in enumerate(params):
        renames[doc["outputs"][1 + k]] = "grad_" + leaves[i].name
    _rename(flat, renames)
    return flat, step


def _tag_phases(doc: dict) -> None:
    producer = {o: node for node in doc["nodes"] for o in node["outputs"]}
    forward: set[int] = set()
    stack = [producer[doc["outputs"][0]]] if doc["outputs"][0] in producer else []
    while stack:
        node = stack.pop()
        if id(node) in forward:
            continue
        forward.add(id(node))
        for ref in _refs(node["args"]):
            if ref in producer:
                stack.append(producer[ref])
    for node in doc["nodes"]:
        node["phase"] = "forward" if id(node) in forward else "backward"
    doc["nodes"] = [n for n in doc["nodes"] if n["phase"] == "forward"] + [
        n for n in doc["nodes"] if n["phase"] == "backward"
    ]


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
