"""The whole-program check: the lowered program run by SOLAR's executor on the framework's
golden inputs, each output compared with the framework's elementwise: ``|solar - framework| <=
atol * max(1, max|framework|) + rtol * |framework|``, with (rtol, atol) from ``TOLERANCES`` by
the output's dtype (integers and bool: exact; the C++ oracle, exec/verify.h)."""

from __future__ import annotations

from typing import Any

import numpy as np

from solar import _core, ir
from solar.document import REAL_FLOATS, framework_name
from solar.options import AnalysisError
from solar.verify import GoldenUnavailableError, Verification, not_run

# (rtol, atol) per dtype, from the C++ oracle's one table (exec/verify.h). The framework computes
# in the dtype, SOLAR's executor in double and rounds once per store, so the difference is the
# framework's rounding: a few ulps times a reduction's depth.
TOLERANCES = {d: _core.tolerance(d) for d in ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2")}


def check_whole(lowering: Any, captured: Any) -> tuple[Verification, dict[str, np.ndarray]]:
    """The whole-program check of ``lowering`` (a ``_core.LoweringResult``) against
    ``captured`` (a ``solar.stages.Captured``): one golden run of the framework, recording
    what the check needs besides the outputs (``recorded``, the keys of topk indices), then
    ``verify_whole``; and the golden data ("not_run" and none when the framework cannot record
    them: ``GoldenUnavailableError``)."""
    ties = topk_indices(captured.document)  # their keys recorded, then compared
    try:
        golden = captured.golden([*recorded(lowering), *(t["keys"] for t in ties.values())])
    except GoldenUnavailableError as e:
        return not_run(f"{e}; the lowered program was NOT checked", "whole_program"), {}
    return verify_whole(lowering, captured.document, golden, lowering, ties), golden


def fed_outputs(lowering: Any) -> list[str]:
    """The outputs of nodes without a rule (``lowering``: a ``_core.LoweringResult``): the
    program reads them as inputs, fed from the framework's run."""
    return [o for u in lowering.unsupported for o in u["outputs"]]


def recorded(lowering: Any) -> list[str]:
    """The intermediate tensors a golden run must record (``lowering``: a
    ``_core.LoweringResult``): the outputs of nodes without a rule (fed to the program as
    inputs) and the framework's random draws, from the same run as the outputs they are
    compared with."""
    fed = fed_outputs(lowering)
    return fed + [d["value_of"] for d in lowering.random if d["value_of"] not in fed]


def verify_whole(
    ir_text: Any,
    document: dict,
    golden: dict[str, np.ndarray],
    lowering: Any = None,
    ties: dict[str, dict] | None = None,
    values: dict[str, np.ndarray] | None = None,
) -> Verification:
    """Runs the lowered program (``ir_text``: as ``solar.ir.run`` takes it; the lowering's
    ``LoweringResult``, checked once) on the golden inputs and compares each output with the
    framework's (``values``, when given, gains SOLAR's value of each compared output).
    ``lowering``: the ``_core.LoweringResult`` of ``ir_text`` (None: nothing fed, no draws):
    the outputs of nodes that were not lowered (``fed_outputs``) are read from ``golden`` as
    program inputs (graph outputs among them are not compared), and each ``random`` tensor
    takes the framework's draw, the golden value of its ``value_of``. ``ties``: the document's
    topk indices (``topk_indices``, found once by the caller, which records their keys in
    ``golden``), accepted up to ties (None: none)."""
    program = ir.parse(ir_text)
    fed = fed_outputs(lowering) if lowering is not None else []
    random = lowering.random if lowering is not None else []
    draws = {d["tensor"]: d["value_of"] for d in random}
    feed = {}
    for name, role, _dtype in program.tensors:
        if role == "random":
            if draws.get(name) not in golden:
                raise AnalysisError(
                    f"the random draw '{name}' has no value from the framework's run (its values "
                    "are the framework's: the golden run must record them)"
                )
            feed[name] = golden[draws[name]]
        elif role in ("input", "weight"):
            if name not in golden and name in fed:
                raise AnalysisError(
                    f"'{name}', an output of an unsupported node, has no golden value (the "
                    "framework's run must record it to verify the rest of the program)"
                )
            if name not in golden:
                raise AnalysisError(f"the lowered program's {role} '{name}' is not in the capture")
            feed[name] = golden[name]
    got = ir.run(ir_text, feed)  # a LoweringResult's program is not checked again
    dtypes = {t["name"]: t["dtype"] for t in document["tensors"]}
    lowest = lowest_precision_computed(document)
    ties = ties or {}
    outputs = []
    not_compared = []
    for name in document["outputs"]:
        if name in fed:
            not_compared.append(name)
            continue
        if name not in got:
            raise AnalysisError(f"the lowered program has no output '{name}'")
        low = lowest.get(name)
        tol = dict(zip(("rtol", "atol"), TOLERANCES[low], strict=True)) if low else {}
        compared = compare_output(name, dtypes[name], np.asarray(got[name]), golden[name], **tol)
        if not compared["passed"] and name in ties:
            _accept_tied_indices(compared, ties[name], np.asarray(got[name]), golden)
        outputs.append(compared)
        if values is not None:
            values[name] = np.asarray(got[name])
    passed = all(o["passed"] for o in outputs)
    framework = framework_name(document)
    detail = f"{len(outputs)} output(s) compared with {framework} on the same inputs"
    through = [
        f"{o['name']} {o['dtype']} through {lowest[o['name']]}"
        for o in outputs
        if o["name"] in lowest
    ]
    if through:
        detail += (
            f"; {len(through)} compared at the tolerance of a lower precision they were "
            f"computed in ({_listed(through)})"
        )
    failed = [o for o in outputs if not o["passed"]]
    if failed:
        detail += (
            f"; {len(failed)} outside the tolerance: {_listed([_failed_output(o) for o in failed])}"
        )
    tied = [o["name"] for o in outputs if o.get("tied_indices")]
    if tied:
        detail += (
            f"; verified up to ties in topk ({', '.join(tied)}: equal keys picked in another order)"
        )
    if draws:
        detail += f"; the {len(draws)} random draw(s) take {framework}'s values from the same run"
    if fed:
        detail += (
            f"; the {len(fed)} output(s) of unsupported nodes were fed from {framework}'s run"
            + (
                f" ({len(not_compared)} graph output(s) among them not compared)"
                if not_compared
                else ""
            )
        )
    status = "passed" if passed else "failed"
    return Verification(status, "whole_program", detail, outputs=outputs, not_compared=not_compared)


def lowest_precision_computed(document: dict) -> dict[str, str]:
    """Per graph output: the least precise float dtype that a value it is computed from was
    computed in, where that is less precise than the output's own dtype (outputs not listed:
    their own). A float32 state computed from bf16 products differs between two correct runs
    by bf16's rounding, not float32's: the framework rounds each bf16 op, SOLAR's executor
    once per store, so such an output is compared with that dtype's tolerance."""
    dtype = {t["name"]: t["dtype"] for t in document["tensors"]}
    rank = {d: i for i, d in enumerate(REAL_FLOATS)}
    # One pass in graph order (nodes come after the values they read): each computed value's
    # least precise float along the way, its own dtype included; inputs and weights count not.
    worst: dict[str, str | None] = {}
    for node in document.get("nodes", []):
        reads = [worst[r] for r in _tensor_args(node.get("args")) if r in worst]
        for out in node.get("outputs") or []:
            if out:
                floats = [d for d in (dtype.get(out), *reads) if d in rank]
                worst[out] = max(floats, key=rank.__getitem__, default=None)
    return {
        out: worst[out]
        for out in document["outputs"]
        if dtype.get(out) in rank and worst.get(out) not in (None, dtype[out])
    }


def _tensor_args(args: Any) -> Any:
    """The tensor names an op's arguments read (``{"tensor": name}`` at any depth)."""
    if isinstance(args, dict):
        if isinstance(args.get("tensor"), str):
            yield args["tensor"]
            return
        for value in args.values():
            yield from _tensor_args(value)
    elif isinstance(args, list):
        for value in args:
            yield from _tensor_args(value)


def topk_indices(document: dict) -> dict[str, dict]:
    """The graph outputs that are a topk's indices, by name: {"keys": the tensor ranked, "dim"}.
    PyTorch leaves the order of equal keys unspecified (SOLAR's rule keeps position order)."""
    found = {}
    for node in document.get("nodes", []):
        outs = node.get("outputs", [])
        if node.get("op") == "aten.topk.default" and len(outs) == 2 and outs[1]:
            found[outs[1]] = {"keys": node["args"]["self"]["tensor"], "dim": node["args"]["dim"]}
    return {n: found[n] for n in document["outputs"] if n in found}


def _accept_tied_indices(compared: dict, topk: dict, got: np.ndarray, golden: dict) -> None:
    """A topk's indices that differ from the framework's pass when every index is a valid pick
    among ties: each row's indices are distinct and the keys they select equal, rank by rank
    and exactly, the keys the framework's indices select. Marks ``compared`` passed with
    ``tied_indices`` (how many indices differ); leaves it failed otherwise."""
    keys = golden.get(topk["keys"])
    expected = np.asarray(golden[compared["name"]])
    if keys is None or got.shape != expected.shape or got.ndim == 0:
        return
    keys = np.asarray(keys, dtype=np.float64)
    dim = topk["dim"] % got.ndim
    ours, theirs = got.astype(np.int64), expected.astype(np.int64)
    if ours.min(initial=0) < 0 or ours.max(initial=0) >= keys.shape[dim]:
        return
    picked = np.take_along_axis(keys, ours, axis=dim)
    wanted = np.take_along_axis(keys, theirs, axis=dim)
    ranked = np.sort(np.moveaxis(ours, dim, -1), axis=-1)
    distinct = bool(np.all(ranked[..., 1:] != ranked[..., :-1]))
    if distinct and np.array_equal(picked, wanted):
        compared["passed"] = True
        compared["tied_indices"] = int(np.count_nonzero(ours != theirs))


def compare_output(
    name: str, dtype: str, got: np.ndarray, expected: np.ndarray, **tolerance: float
) -> dict:
    """One output of SOLAR's run against the framework's, by the C++ oracle
    (``_core.compare_output``, exec/verify.h; ``solar ir verify`` runs the same) with
    ``TOLERANCES[dtype]``: a dict with name, dtype, shape, rtol, atol, max_abs_err, max_rel_err,
    passed (and error). bf16/f8 arrive as raw bits or ml_dtypes arrays."""
    return _core.compare_output(
        name, dtype, _core_array(got, dtype), _core_array(expected, dtype), **tolerance
    )


def _core_array(a: Any, dtype: str) -> np.ndarray:
    """``a`` as the core reads it: C-contiguous, bf16/f8 ml_dtypes arrays (and int16 bf16 bits)
    as their raw unsigned bits."""
    a = np.asarray(a)
    if a.dtype.kind == "V" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        a = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
    elif dtype == "bf16" and a.dtype == np.int16:
        a = a.view(np.uint16)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)  # (keeps a 0-d array 0-d)


def _listed(items: list[str], most: int = 3) -> str:
    """The first ``most`` of ``items``, joined, and how many more."""
    shown = "; ".join(items[:most])
    return shown + (f"; and {len(items) - most} more" if len(items) > most else "")


def _failed_output(o: dict) -> str:
    """``OUTPUT dtype[shape] max_abs_err=E max_rel_err=R (rtol=.. atol=..)`` of a compared
    output that failed (or ``OUTPUT: error``)."""
    if o.get("error"):
        return f"{o.get('name')}: {o['error']}"
    shape = ", ".join(str(d) for d in o.get("shape") or [])

    def err(key: str) -> str:  # null: not a number (NaN or inf in an output)
        value = o.get(key)
        return "nan" if value is None else f"{value:.3g}"

    return (
        f"{o.get('name')} {o.get('dtype')}[{shape}] "
        f"max_abs_err={err('max_abs_err')} max_rel_err={err('max_rel_err')} "
        f"(rtol={o.get('rtol')} atol={o.get('atol')})"
    )
