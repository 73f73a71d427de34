"""Serving steps of a decoder (docs/serving.md): the graph of one prefill or one decode step,
built by SOLAR itself at a batch B and a context T, captured, lowered, verified and analysed
like any model; the serving figures (SOL per token, tokens/s, the batch at which decode turns
compute bound) are the C++ core's (``_core.serving_report``, include/solar/sol/serving.h).

A model file serves when

- its ``Model`` is, or holds as a submodule, one Hugging Face ``transformers`` causal LM (a
  ``PreTrainedModel`` with a language-model head, ``can_generate()``): SOLAR builds the step
  itself, through a ``transformers`` ``StaticCache`` whose layers hold the step's cache as
  explicit tensors: decode reads the T - 1 cached tokens' keys and values (graph inputs) and
  writes the new token's (graph outputs); prefill writes the T prompt tokens' and returns the
  last token's logits;
- or the file defines ``get_serve_inputs(phase, batch, context)``: the inputs of one step of
  ``Model(*get_init_inputs())`` (a user's own decoder, its cache an explicit input).

torch is imported only when a function here is called (as by ``solar.frontend``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solar.options import DEFAULT_HW, SERVE_PHASES, AnalysisError, Options
from solar.pipeline import timed
from solar.stages import run

PHASES = SERVE_PHASES
HOOK = "get_serve_inputs"
EXPECTED = (
    "--serve needs a decoder: a Model that is, or holds as a submodule, one Hugging Face "
    "transformers causal LM (built from its config), or a model file that defines "
    f"{HOOK}(phase, batch, context) returning one step's inputs (docs/serving.md)"
)

__all__ = [
    "HOOK",
    "PHASES",
    "Decoder",
    "ServingReport",
    "analyze_serving",
    "load_decoder",
    "parse_batches",
    "step_of_file",
]


def parse_batches(text: str) -> list[int]:
    """``--batch-sweep``: ``1,2,4,8`` (increasing, each >= 1) or ``A..B`` (the powers of two
    from A to B, and B itself)."""
    text = text.strip()
    try:
        if ".." in text:
            lo_text, hi_text = text.split("..", 1)
            lo, hi = int(lo_text), int(hi_text)
            if lo < 1 or hi < lo:
                raise ValueError
            batches, b = [], 1
            while b <= hi:
                if b >= lo:
                    batches.append(b)
                b *= 2
            if not batches or batches[0] != lo:
                batches.insert(0, lo)
            if batches[-1] != hi:
                batches.append(hi)
            return batches
        batches = [int(part) for part in text.split(",")]
    except ValueError:
        raise AnalysisError(
            f"--batch-sweep '{text}': expected batch sizes such as 1,2,4,8 or a range 1..512"
        ) from None
    if any(b < 1 for b in batches) or batches != sorted(set(batches)):
        raise AnalysisError(
            f"--batch-sweep '{text}': batch sizes must be increasing and at least 1"
        )
    return batches


def check_step(phase: str, batch: int, context: int) -> None:
    """A user error (one line) for a phase, batch or context that cannot be served (the rules
    of ``solar.options``)."""
    Options.of(serve=phase, batch=batch, context=context)


# ---------------------------------------------------------------------------------------------
# The step of a model file


@dataclass
class Step:
    """One serving step: the module to capture, its inputs, and what it is."""

    module: Any
    inputs: tuple
    kind: str  # "transformers" (SOLAR built the step) or "hook" (get_serve_inputs)
    name: str  # the causal LM's class, or the model's


def _load(path: str) -> tuple[Any, Any]:
    """The model file's module and ``Model(*get_init_inputs())``, built after
    ``torch.manual_seed(0)``."""
    import torch

    from solar._modelfile import call_model_code, import_model_file
    from solar.capture import CaptureError

    if not os.path.isfile(path):
        raise AnalysisError(f"{path}: no such file")
    name = "_solar_serve_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    module = import_model_file(path, name, CaptureError)
    if not hasattr(module, "Model"):
        raise AnalysisError(f"{path}: defines no 'Model'; {EXPECTED}")
    torch.manual_seed(0)
    get_init = getattr(module, "get_init_inputs", lambda: [])
    init = call_model_code(path, "get_init_inputs()", CaptureError, get_init)
    model = call_model_code(path, "Model(...)", CaptureError, lambda: module.Model(*init))
    return module, model


def causal_lms(model: Any) -> list[tuple[str, Any]]:
    """The outermost Hugging Face causal LMs in ``model`` (itself included): ``(path, module)``
    for each ``transformers.PreTrainedModel`` that can generate (has a language-model head)
    and is not inside another one."""
    try:
        from transformers import PreTrainedModel
    except ImportError:
        return []
    found: list[tuple[str, Any]] = []
    inside: list[str] = []  # the paths of the transformers models seen, found or not

    def within(path: str) -> bool:
        return any(p == "" or path.startswith(p + ".") for p in inside)

    for path, sub in model.named_modules():
        if not isinstance(sub, PreTrainedModel) or within(path):
            continue
        inside.append(path)
        can = getattr(sub, "can_generate", None)
        if callable(can) and can():
            found.append((path, sub))
    return found


@dataclass
class Decoder:
    """A model file that serves: its module and model, and how its steps are built."""

    path: str
    module: Any
    model: Any
    lm: Any = None  # the Hugging Face causal LM; None with get_serve_inputs

    def step(self, phase: str, batch: int, context: int) -> Step:
        """The step of ``phase`` at ``batch`` x ``context`` (module doc)."""
        check_step(phase, batch, context)
        if self.lm is not None:
            return hf_step(self.lm, phase, batch, context)
        from solar._modelfile import call_model_code
        from solar.capture import CaptureError

        hook = getattr(self.module, HOOK)
        inputs = call_model_code(
            self.path,
            f"{HOOK}({phase!r}, {batch}, {context})",
            CaptureError,
            lambda: hook(phase, batch, context),
        )
        if not isinstance(inputs, (list, tuple)):
            raise AnalysisError(
                f"{self.path}: {HOOK}() returned {type(inputs).__name__}, not a list of inputs"
            )
        return Step(self.model, tuple(inputs), "hook", type(self.model).__name__)


def load_decoder(path: str) -> Decoder:
    """The model file as a decoder (module doc); a one-line error when it is none."""
    module, model = _load(path)
    if hasattr(module, HOOK):
        return Decoder(path, module, model)
    lms = causal_lms(model)
    if len(lms) != 1:
        found = "none" if not lms else ", ".join(f"'{p or 'Model'}'" for p, _ in lms)
        raise AnalysisError(f"{os.path.basename(path)}: causal LMs found: {found}; {EXPECTED}")
    return Decoder(path, module, model, lms[0][1])


def step_of_file(path: str, phase: str, batch: int, context: int) -> Step:
    """The step of ``phase`` at ``batch`` x ``context`` of a model file (module doc)."""
    check_step(phase, batch, context)
    return load_decoder(path).step(phase, batch, context)


# ---------------------------------------------------------------------------------------------
# Hugging Face causal LMs through a static cache


def _step_layer_class() -> type:
    from transformers.cache_utils import StaticLayer

    class StepLayer(StaticLayer):
        """A static cache layer of one step: ``past`` (keys, values of the tokens before the
        step: graph inputs, or None when there are none) and the step's own keys and values,
        kept in ``new`` (graph outputs). ``update`` returns the whole cache of ``max_cache_len``
        tokens the step attends to: the past followed by the new rows (the cache is written
        where the new tokens go, and read whole)."""

        def __init__(self, max_cache_len: int, past: tuple | None) -> None:
            super().__init__(max_cache_len)
            self.past = past
            self.new: tuple | None = None
            self.is_initialized = True

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple:
            import torch

            self.new = (key_states, value_states)
            if self.past is None:
                return key_states, value_states
            keys = torch.cat([self.past[0], key_states], dim=-2)
            values = torch.cat([self.past[1], value_states], dim=-2)
            return keys, values

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.max_cache_len, 0

        def get_seq_length(self) -> int:
            return 0 if self.past is None else int(self.past[0].shape[-2])

    return StepLayer


def _run_through_step_cache(
    lm: Any, input_ids: Any, position_ids: Any, max_len: int, pairs: list, n_layers: int
) -> tuple[Any, list]:
    """``lm`` run on the tokens through a StaticCache of ``max_len`` whose layers are step
    layers (``pairs``: each layer's cached keys and values, or none): the output and, per layer,
    the keys and values it wrote (a one-line error naming a layer that wrote none)."""
    from transformers.cache_utils import StaticCache

    layer = _step_layer_class()
    cache = StaticCache(config=lm.config, max_cache_len=max_len)
    cache.layers = [layer(max_len, pairs[i] if pairs else None) for i in range(n_layers)]
    out = lm(
        input_ids=input_ids,
        position_ids=position_ids,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    written = []
    for i, step_layer in enumerate(cache.layers):
        if step_layer.new is None:
            raise AnalysisError(
                f"{type(lm).__name__}: layer {i} wrote nothing to its cache (a layer without "
                "attention is not served yet)"
            )
        written.append(step_layer.new)
    return out, written


def _hf_step_module() -> type:
    import torch

    class HFStep(torch.nn.Module):
        """One serving step of a causal LM: ``forward(input_ids, position_ids, *past)`` with
        ``past`` = keys and values of each layer, in order; returns the logits of the last token
        and each layer's new keys and values."""

        def __init__(self, lm: Any, context: int, n_layers: int) -> None:
            super().__init__()
            self.lm = lm
            self.context = context
            self.n_layers = n_layers

        def forward(self, input_ids: Any, position_ids: Any, *past: Any) -> tuple:
            pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
            out, written = _run_through_step_cache(
                self.lm, input_ids, position_ids, self.context, pairs, self.n_layers
            )
            return (out.logits, *(t for kv in written for t in kv))

    return HFStep


def _kv_shapes(lm: Any) -> list[tuple[tuple, tuple, Any]]:
    """Per attention layer: (key shape, value shape, dtype) of one token of one sequence, as
    ``(heads, 1, head_dim)``: from one real single-token run of the model through the step's
    cache (the shapes every model gives its cache, MLA's decompressed keys included)."""
    import torch

    n = int(lm.config.get_text_config().num_hidden_layers)
    token = torch.zeros((1, 1), dtype=torch.long)
    with torch.no_grad():
        _, written = _run_through_step_cache(lm, token, token, 1, [], n)
    shapes = []
    for k, v in written:
        shapes.append((tuple(k.shape[1:]), tuple(v.shape[1:]), k.dtype))
    return shapes


def hf_step(lm: Any, phase: str, batch: int, context: int) -> Step:
    """The step of a Hugging Face causal LM (module doc): decode, ``batch`` new tokens at
    position ``context`` - 1 attending to ``context`` tokens (the ``context - 1`` cached ones,
    inputs, and their own); prefill, ``batch`` x ``context`` prompt tokens."""
    import torch

    check_step(phase, batch, context)
    vocab = int(lm.config.get_text_config().vocab_size)
    shapes = _kv_shapes(lm)
    step = _hf_step_module()(lm, context, len(shapes))
    gen = torch.Generator().manual_seed(0)
    if phase == "decode":
        ids = torch.randint(0, vocab, (batch, 1), generator=gen)
        positions = torch.full((batch, 1), context - 1, dtype=torch.long)
        past = []
        for k_shape, v_shape, dtype in shapes:
            for shape in (k_shape, v_shape):
                full = (batch, shape[0], context - 1, *shape[2:])
                past.append(torch.randn(full, generator=gen).to(dtype))
        inputs = (ids, positions, *past)
    else:
        ids = torch.randint(0, vocab, (batch, context), generator=gen)
        positions = torch.arange(context, dtype=torch.long).expand(batch, context).contiguous()
        inputs = (ids, positions)
    if phase == "decode" and context == 1:
        inputs = inputs[:2]  # nothing cached before the first token
    return Step(step, inputs, "transformers", type(lm).__name__)


# ---------------------------------------------------------------------------------------------
# Analysis


@dataclass
class ServingReport:
    """The serving figures (``data``: the JSON, ``table``: the terminal rendering) and the SOL
    report of each step analysed (``steps``: ``solar.pipeline.Report``, by batch)."""

    data: dict
    table: str
    steps: list[Any] = field(default_factory=list)
    core: Any = field(default=None, repr=False)

    def to_json(self) -> str:
        import json

        return json.dumps(self.data, sort_keys=True, indent=2, allow_nan=False) + "\n"


def analyze_serving(
    path: str | os.PathLike,
    phase: str,
    batches: Sequence[int],
    context: int,
    hw: str = DEFAULT_HW,
    stage_times: dict[str, float] | None = None,
    **options: Any,
) -> ServingReport:
    """The serving report of a model file (module doc): one step of ``phase`` per batch size
    in ``batches`` (``options``: ``solar.options.Options.of``'s keywords)."""
    if not batches:
        raise AnalysisError("no batch size to analyse")
    opts = Options.of(hw, serve=phase, batches=tuple(batches), context=context, **options)
    return run_serving(path, opts, stage_times)


def run_serving(
    path: str | os.PathLike, options: Options, stage_times: dict[str, float] | None = None
) -> ServingReport:
    """The serving report of a model file under ``options`` (``options.program``: the phase,
    the batches, the context): one step per batch size, each captured, lowered and analysed by
    ``solar.stages.run``; the first (smallest) batch is verified as ``solar analyze`` verifies
    (a failed check rechecked in float64), the others differ from it only in the batch size and
    are not run again (each says so)."""
    import json

    from solar import _core
    from solar.capture import capture
    from solar.frontend import TorchCaptured

    path = os.fspath(path)
    program = options.program
    phase, batches, context = program.phase, program.batches, program.context
    verify = options.verification.enabled
    source = os.path.basename(path)
    reports = []
    verifications = []
    with timed(stage_times, "capture"):
        decoder = load_decoder(path)
    for i, batch in enumerate(batches):

        def captured(batch: int = batch) -> TorchCaptured:
            step = decoder.step(phase, batch, context)
            cap = capture(step.module, step.inputs, source=source)
            return TorchCaptured(
                cap, lambda m, xs: capture(m, xs, source=source), step.module, step.inputs
            )

        step_options = options
        if i > 0 or not verify:
            step_options = options.replace(verification={"enabled": False})
        report = run(captured, step_options, stage_times)
        verification = dict(report.verification)
        if i > 0 and verify:
            verification = {
                "status": "not_run",
                "mode": None,
                "detail": f"the step of batch {batches[0]} was verified "
                f"({verifications[0]['status']}); these differ from it only in the batch size",
            }
        if i == 0 and verification["status"] == "failed":
            raise AnalysisError(
                f"{source}: verification of the {phase} step at batch {batch} failed: "
                f"{verification['detail']}"
            )
        reports.append(report)
        verifications.append(verification)
    with timed(stage_times, "analysis"):
        core = _core.serving_report(
            phase,
            context,
            [(b, r.core) for b, r in zip(batches, reports, strict=True)],
            [json.dumps(v, sort_keys=True) for v in verifications],
        )
    return ServingReport(json.loads(core.to_json()), core.render(), reports, core)
