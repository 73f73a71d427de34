"""The serving steps of a PyTorch decoder (docs/serving.md): the graph of one prefill or one
decode step, built by SOLAR itself at a batch B and a context T; ``solar.serving`` runs the
steps, one per batch size, through ``solar.stages.run`` (captured, lowered, verified and analysed
like any model) and makes the serving figures.

A model file serves when

- its ``Model`` is, or holds as a submodule, one Hugging Face ``transformers`` causal LM (a
  ``PreTrainedModel`` with a language-model head, ``can_generate()``): SOLAR builds the step
  itself, through a ``transformers`` ``StaticCache`` whose layers hold the step's cache as
  explicit tensors: decode reads the T - 1 cached tokens' keys and values (graph inputs) and
  writes the new token's (graph outputs); prefill writes the T prompt tokens' and returns the
  last token's logits;
- or the file defines ``get_serve_inputs(phase, batch, context)``: the inputs of one step of
  ``Model(*get_init_inputs())`` (a user's own decoder, its cache an explicit input).

- ``analyze_serving(path, phase, batches, context, hw=..., **options)``: the serving report of
  a model file (``solar.serving.ServingReport``).
- ``serve_file(path, options, stage_times)``: the same under one ``solar.options.Options``
  (``solar analyze --serve`` runs it through ``solar.adapters.run_file``).

torch is imported only when a function here is called (as by ``solar.torch``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from solar import serving
from solar.options import DEFAULT_HW, AnalysisError, Options, serving_tp
from solar.serving import PHASES, ServingReport, check_step

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
    "serve_file",
    "step_of_file",
]


# ---------------------------------------------------------------------------------------------
# The step of a model file


@dataclass
class Step:
    """One serving step: the module to capture, its inputs, and what it is."""

    module: Any
    inputs: tuple
    kind: str  # "transformers" (SOLAR built the step) or "hook" (get_serve_inputs)
    name: str  # the causal LM's class, or the model's


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
    mode: Any = None  # the FakeTensorMode of a model built without weights; None: real

    def step(self, phase: str, batch: int, context: int) -> Step:
        """The step of ``phase`` at ``batch`` x ``context`` (module doc); a one-line error for
        a step that cannot be served (``check_step``)."""
        check_step(phase, batch, context)
        return self.checked_step(phase, batch, context)

    def checked_step(self, phase: str, batch: int, context: int) -> Step:
        """``step`` for a phase, batch and context already checked (``serve_file``: by its
        ``Options``, once)."""
        if self.lm is not None:
            return hf_step(self.lm, phase, batch, context, self.mode)
        from solar._modelfile import call_model_code
        from solar.torch.capture import CaptureError

        hook = getattr(self.module, HOOK)
        with _within(self.mode):  # the hook's tensors: FakeTensors with a model built so
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


def _within(mode: Any) -> Any:
    """``mode`` as a context (a FakeTensorMode), or no context (None)."""
    from contextlib import nullcontext

    return nullcontext() if mode is None else mode


def load_decoder(path: str, weights: bool = True, prog: str = "solar") -> Decoder:
    """The model file as a decoder (module doc), built for real (``weights``) or without its
    weights (its steps' tensors are then FakeTensors); a one-line error when it is none."""
    from solar.torch.capture import load_model

    module, model, mode = load_model(
        path, weights, prog, "_solar_serve_", ("Model",), f"; {EXPECTED}"
    )
    if hasattr(module, HOOK):
        return Decoder(path, module, model, mode=mode)
    lms = causal_lms(model)
    if len(lms) != 1:
        found = "none" if not lms else ", ".join(f"'{p or 'Model'}'" for p, _ in lms)
        raise AnalysisError(f"{os.path.basename(path)}: causal LMs found: {found}; {EXPECTED}")
    return Decoder(path, module, model, lms[0][1], mode)


def step_of_file(path: str, phase: str, batch: int, context: int) -> Step:
    """The step of ``phase`` at ``batch`` x ``context`` of a model file (module doc)."""
    check_step(phase, batch, context)
    return load_decoder(path).checked_step(phase, batch, context)


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


def _step_linear_class() -> type:
    from transformers.cache_utils import LinearAttentionLayer

    class StepLinearLayer(LinearAttentionLayer):
        """A linear-attention cache layer of one step (a Mamba, gated delta or short-convolution
        layer): ``past`` (per state: its convolution and recurrent states before the step,
        graph inputs, or None when there are none) is what the layer reads; what it holds
        after the step (written in place into the inputs, or new tensors) are graph outputs."""

        def __init__(self, number_of_states: int = 1, past: dict | None = None, **_: Any) -> None:
            super().__init__(number_of_states=number_of_states)
            for i, (conv, recurrent) in (past or {}).items():
                if conv is not None:
                    self.conv_states[i] = conv
                    self.conv_kernel_size[i] = int(conv.shape[-1])
                    self.is_conv_states_initialized[i] = True
                    self.dtype, self.device = conv.dtype, conv.device
                if recurrent is not None:
                    self.recurrent_states[i] = recurrent
                    self.is_recurrent_states_initialized[i] = True
                self.has_previous_state[i] = True

        def lazy_initialization(self, *args: Any, **kwargs: Any) -> None:
            # No static address to mark: the step is traced, never run under cudagraphs.
            import torch

            conv = kwargs.get("conv_states")
            recurrent = kwargs.get("recurrent_states")
            i = int(kwargs.get("state_idx", 0))
            if conv is not None:
                size = kwargs.get("conv_kernel_size") or int(conv.shape[-1])
                self.dtype, self.device = conv.dtype, conv.device
                self.conv_kernel_size[i] = size
                self.conv_states[i] = torch.zeros(
                    (*conv.shape[:-1], size), dtype=conv.dtype, device=conv.device
                )
                self.is_conv_states_initialized[i] = True
            if recurrent is not None:
                self.recurrent_states[i] = torch.zeros_like(recurrent)
                self.is_recurrent_states_initialized[i] = True

        def states(self) -> list[tuple[str, Any]]:
            """What the layer holds, in order: ``(name, tensor)`` per convolution and recurrent
            state that is set."""
            held = []
            for i in range(self.number_of_states):
                if self.is_conv_states_initialized[i]:
                    held.append((f"conv{i}", self.conv_states[i]))
                if self.is_recurrent_states_initialized[i]:
                    held.append((f"recurrent{i}", self.recurrent_states[i]))
            return held

    return StepLinearLayer


# The kinds of cache layer (``transformers.cache_utils.get_layer_types_and_kwargs``) a serving
# step models: a key/value cache, a linear-attention state (convolution and recurrent states),
# both, or none (a layer of experts or an MLP alone, a layer that reuses another's cache).
_ATTENTION_LAYERS = frozenset({"full_attention", "sliding_attention", "chunked_attention"})
_LINEAR_LAYERS = frozenset({"conv", "linear_attention"})
_HYBRID_LAYERS = frozenset({"hybrid", "hybrid_sliding"})
_STATELESS_LAYERS = frozenset({"dummy"})


def _layer_kinds(lm: Any) -> tuple[list[str], list[dict]]:
    """Each layer's cache kind and its cache layer's keywords (transformers' own reading of
    the config)."""
    from transformers.cache_utils import get_layer_types_and_kwargs

    kinds, kwargs = get_layer_types_and_kwargs(lm.config.get_text_config(decoder=True))
    return [str(k) for k in kinds], list(kwargs)


def _step_layers(lm: Any, max_len: int, past: list | None) -> list:
    """The step cache's layers: per layer, a step layer of its kind holding ``past[i]`` (a
    list of ``(name, tensor)``: its cached keys and values, its convolution and recurrent
    states), or nothing before the first token (``past`` None)."""
    from transformers.cache_utils import DummyLayer

    attention, linear = _step_layer_class(), _step_linear_class()

    class StepHybridLayer(linear, attention):  # type: ignore[misc, valid-type]
        def __init__(self, kv: tuple | None, states: dict, number_of_states: int = 1) -> None:
            attention.__init__(self, max_len, kv)
            linear.__init__(self, number_of_states, states)

    layers = []
    kinds, kwargs = _layer_kinds(lm)
    for i, (kind, kw) in enumerate(zip(kinds, kwargs, strict=True)):
        held = dict(past[i]) if past else {}
        kv = (held["key"], held["value"]) if "key" in held else None
        states: dict = {}
        for name, t in held.items():
            for prefix, at in (("conv", 0), ("recurrent", 1)):
                if name.startswith(prefix):
                    entry = states.setdefault(int(name[len(prefix) :]), [None, None])
                    entry[at] = t
        states = {k: tuple(v) for k, v in states.items()}
        n = int(kw.get("number_of_states", 1))
        if kind in _ATTENTION_LAYERS:
            layers.append(attention(max_len, kv))
        elif kind in _LINEAR_LAYERS:
            layers.append(linear(n, states))
        elif kind in _HYBRID_LAYERS:
            layers.append(StepHybridLayer(kv, states, n))
        else:
            layers.append(DummyLayer())
    return layers


def _held(layer: Any) -> list[tuple[str, Any]]:
    """What a step layer holds after the step, in order: its new keys and values, then its
    convolution and recurrent states (``(name, tensor)``)."""
    held = []
    new = getattr(layer, "new", None)
    if new is not None:
        held += [("key", new[0]), ("value", new[1])]
    states = getattr(layer, "states", None)
    if states is not None:
        held += states()
    return held


def _run_through_step_cache(
    lm: Any, input_ids: Any, position_ids: Any, max_len: int, past: list | None
) -> tuple[Any, list]:
    """``lm`` run on the tokens through a StaticCache of ``max_len`` whose layers are step
    layers holding ``past`` (``_step_layers``): the output and, per layer, what it holds after
    the step (``_held``; a one-line error naming a layer with a cache that wrote none)."""
    from transformers.cache_utils import StaticCache

    cache = StaticCache(config=lm.config, max_cache_len=max_len)
    cache.layers = _step_layers(lm, max_len, past)
    out = lm(
        input_ids=input_ids,
        position_ids=position_ids,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    written = []
    kinds, _ = _layer_kinds(lm)
    for i, step_layer in enumerate(cache.layers):
        held = _held(step_layer)
        if not held and kinds[i] not in _STATELESS_LAYERS:
            raise AnalysisError(
                f"{type(lm).__name__}: layer {i} ({kinds[i]}) wrote nothing to its cache"
            )
        written.append(held)
    return out, written


def _hf_step_module() -> type:
    import torch

    class HFStep(torch.nn.Module):
        """One serving step of a causal LM: ``forward(input_ids, position_ids, *past)`` with
        ``past`` = what each layer holds before the step, in order (``layout``: the names per
        layer: keys and values, convolution and recurrent states); returns the logits of the
        last token and what each layer holds after it, in the same order."""

        def __init__(self, lm: Any, context: int, layout: list[list[str]]) -> None:
            super().__init__()
            self.lm = lm
            self.context = context
            self.layout = layout

        def forward(self, input_ids: Any, position_ids: Any, *past: Any) -> tuple:
            held = None
            if past:
                held, at = [], 0
                for names in self.layout:
                    held.append(list(zip(names, past[at : at + len(names)], strict=True)))
                    at += len(names)
            out, written = _run_through_step_cache(
                self.lm, input_ids, position_ids, self.context, held
            )
            return (out.logits, *(t for layer in written for _, t in layer))

    return HFStep


def _state_shapes(lm: Any, mode: Any = None) -> list[list[tuple[str, tuple, Any]]]:
    """Per layer: what its cache holds for one sequence, ``(name, shape, dtype)`` in order:
    keys and values of one token as ``(heads, 1, head_dim)``, convolution and recurrent
    states whole; from one single-token run of the model through the step's cache (the shapes
    every model gives its cache, MLA's decompressed keys included), a run of FakeTensors in
    ``mode`` for a model built without weights."""
    import torch

    with _within(mode), torch.no_grad():
        token = torch.zeros((1, 1), dtype=torch.long)
        _, written = _run_through_step_cache(lm, token, token, 1, None)
    return [[(name, tuple(t.shape[1:]), t.dtype) for name, t in layer] for layer in written]


def hf_step(lm: Any, phase: str, batch: int, context: int, mode: Any = None) -> Step:
    """The step of a Hugging Face causal LM (module doc): decode, ``batch`` new tokens at
    position ``context`` - 1 attending to ``context`` tokens (the ``context - 1`` cached ones,
    inputs, and their own); prefill, ``batch`` x ``context`` prompt tokens. ``mode``: the
    FakeTensorMode of a model built without weights (the inputs are then FakeTensors too).
    ``phase``, ``batch`` and ``context`` are the caller's, checked (``Decoder.step``)."""
    check_served_layers(lm)
    shapes = _state_shapes(lm, mode)
    step = _hf_step_module()(lm, context, [[name for name, _, _ in layer] for layer in shapes])
    with _within(mode):
        inputs = _step_inputs(lm, shapes, phase, batch, context)
    return Step(step, inputs, "transformers", type(lm).__name__)


def check_served_layers(lm: Any) -> None:
    """A one-line ``AnalysisError`` for a causal LM with a layer whose cache the serving step
    does not model (a kind other than a key/value cache, a linear-attention state, both, or
    none: an indexed or compressed attention cache)."""
    kinds, _ = _layer_kinds(lm)
    known = _ATTENTION_LAYERS | _LINEAR_LAYERS | _HYBRID_LAYERS | _STATELESS_LAYERS
    other = sorted(set(kinds) - known)
    if other:
        where = [i for i, k in enumerate(kinds) if k in other]
        shown = ", ".join(str(i) for i in where[:4]) + (", ..." if len(where) > 4 else "")
        raise AnalysisError(
            f"{type(lm).__name__} has layers whose cache --serve does not model "
            f"({', '.join(other)}: layers {shown}); it models key/value caches and "
            "linear-attention states (convolution and recurrent): analyse its forward pass "
            "without --serve"
        )


def _step_inputs(lm: Any, shapes: list, phase: str, batch: int, context: int) -> tuple:
    """The inputs of ``hf_step``'s step: token ids, positions and the cached keys and values."""
    import torch

    vocab = int(lm.config.get_text_config().vocab_size)
    gen = torch.Generator().manual_seed(0)
    if phase == "decode":
        ids = torch.randint(0, vocab, (batch, 1), generator=gen)
        positions = torch.full((batch, 1), context - 1, dtype=torch.long)
        past = []
        for layer in shapes:
            for name, shape, dtype in layer:
                if name in ("key", "value"):  # the context's tokens before the new one
                    shape = (shape[0], context - 1, *shape[2:])
                past.append(torch.randn((batch, *shape), generator=gen).to(dtype))
        inputs = (ids, positions, *past)
    else:
        ids = torch.randint(0, vocab, (batch, context), generator=gen)
        positions = torch.arange(context, dtype=torch.long).expand(batch, context).contiguous()
        inputs = (ids, positions)
    if phase == "decode" and context == 1:
        inputs = inputs[:2]  # nothing cached before the first token
    return inputs


def check_heads(lm: Any, tp: int, source: str) -> None:
    """Tensor parallelism over ``tp`` devices gives each device whole heads: a one-line error
    when ``tp`` does not divide the attention heads and the key/value heads."""
    config = lm.config.get_text_config()
    heads = int(config.num_attention_heads)
    kv = int(getattr(config, "num_key_value_heads", None) or heads)
    if heads % tp or kv % tp:
        raise AnalysisError(
            f"{source}: --parallel tp={tp} must divide the attention heads ({heads}) and the "
            f"key/value heads ({kv}) of {type(lm).__name__}: each device serves whole heads"
        )


# ---------------------------------------------------------------------------------------------
# Analysis


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
    return serve_file(path, opts, stage_times)


def serve_file(
    path: str | os.PathLike, options: Options, stage_times: dict[str, float] | None = None
) -> ServingReport:
    """The serving report of a model file under ``options`` (``options.program``: the phase,
    the batches, the context): the decoder loaded once, its step at each batch size captured
    (``solar.serving.run_serving`` runs the loop).

    The decoder is built without weights (docs/serving.md, "No weight memory"); it is built
    again for real only when the whole program will be verified on it: verification on,
    and its real build (``real_build_bytes``) within ``--verify-budget-mb``. A larger causal
    LM is verified on a reduced twin (``twin_of``), a larger ``get_serve_inputs`` decoder per
    op at full size."""
    from solar.torch.capture import TorchCaptured, capture, check_real_build, real_build_bytes

    path = os.fspath(path)
    program = options.program
    source = os.path.basename(path)
    v = options.verification

    def recapture(m: Any, xs: tuple) -> Any:
        return capture(m, xs, source=source)

    def load_steps() -> Any:
        decoder = load_decoder(path, weights=False)
        need = real_build_bytes(decoder.model)
        if (
            decoder.mode is not None
            and v.enabled
            and v.mode != "per_op"
            and need <= v.budget_mb * 1e6
        ):
            twin = f"a --verify-budget-mb under {need / 1e6:.0f} to verify a reduced twin"
            check_real_build(source, need, "verification", twin + " of the same architecture")
            decoder = load_decoder(path)  # verified whole on the real model
        a = options.analysis
        if decoder.lm is not None and (a.parallel or a.devices):
            check_heads(decoder.lm, serving_tp(a.devices or 0, a.parallel or ""), source)

        def step(batch: int) -> TorchCaptured:
            s = decoder.checked_step(program.phase, batch, program.context)
            captured = TorchCaptured(recapture(s.module, s.inputs), recapture, s.module, s.inputs)
            if decoder.mode is not None and decoder.lm is not None:
                captured.twin = lambda: twin_step(decoder.lm, program.phase, batch, source)
            return captured

        return step

    return serving.run_serving(source, load_steps, options, stage_times)


# ---------------------------------------------------------------------------------------------
# The reduced twin of a causal LM (verification without the weights)

TWIN_LAYERS = 2  # the twin's layers (more when the first layers differ: DeepSeek's dense ones)
TWIN_WIDTH = 512  # the twin's hidden width at most (a multiple of the heads: 8 a head at least)
TWIN_VOCAB = 1024  # the twin's vocabulary at most
TWIN_CONTEXT = 64  # the twin's context at most
# The twin's parameters at most, where a narrower twin exists: 1 GB in float64 (its recheck).
TWIN_PARAMETERS = 128_000_000


def twin_config(config: Any, width: int = TWIN_WIDTH) -> tuple[Any, str]:
    """A copy of a ``transformers`` config shrunk to a reduced twin: fewer layers
    (``TWIN_LAYERS``, and the first ``first_k_dense_replace`` dense ones), a narrower width
    (``width`` at most, the same query and key/value heads, so the same head structure
    at a smaller head dimension; the MLP's widths scaled alike), a smaller vocabulary; the
    same experts, the same routing (top-k), the same layer kinds (more layers when the first
    ones do not hold each kind: a hybrid's). And its description."""
    import copy

    twin = copy.deepcopy(config)
    text = twin.get_text_config()
    layers = int(text.num_hidden_layers)
    keep = min(layers, TWIN_LAYERS + int(getattr(text, "first_k_dense_replace", 0) or 0))
    kinds = getattr(text, "layer_types", None)
    if isinstance(kinds, (list, tuple)) and len(kinds) == layers:
        # Each kind of layer at least once (a hybrid's attention layer may come fourth).
        keep = max(keep, *(list(kinds).index(k) + 1 for k in set(kinds)))
    for key, value in list(vars(text).items()):  # per-layer lists (layer_types, ...)
        if isinstance(value, list) and len(value) == layers:
            setattr(text, key, value[:keep])
    text.num_hidden_layers = keep
    limit, width = width, int(text.hidden_size)
    heads = int(text.num_attention_heads)
    narrow = width
    if width > limit:
        narrow = max(heads * 8, limit // heads * heads)
    if narrow < width:
        scale = narrow / width
        text.hidden_size = narrow
        # A head width derived from the model's (hidden / heads) narrows with it; one of its
        # own stays (MLA's rotary width, DeepSeek's head_dim = qk_rope_head_dim: its latent
        # ranks and head widths do not depend on the hidden width).
        if getattr(text, "head_dim", None) == width // heads:
            text.head_dim = narrow // heads
        for key in (
            "intermediate_size",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
        ):
            value = getattr(text, key, None)
            if isinstance(value, int) and value > 0:
                setattr(text, key, max(8, int(value * scale) // 8 * 8))
    vocab = int(text.vocab_size)
    if vocab > TWIN_VOCAB:
        text.vocab_size = TWIN_VOCAB
        for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            value = getattr(text, key, None)
            if isinstance(value, int) and value >= TWIN_VOCAB:
                setattr(text, key, None)
    parts = [f"a {keep}-layer, width-{text.hidden_size}"]
    if text.vocab_size != vocab:
        parts.append(f"vocabulary-{text.vocab_size}")
    what = ", ".join(parts) + " twin of the same architecture"
    what += f" ({heads} query heads"
    kv = getattr(text, "num_key_value_heads", None)
    if kv is not None:
        what += f", {kv} key/value heads"
    experts = getattr(text, "num_local_experts", None) or getattr(text, "n_routed_experts", None)
    experts = experts or getattr(text, "num_experts", None)
    if experts:
        what += f", {experts} experts"
    return twin, what + ")"


def twin_narrow_enough(lm: Any) -> tuple[Any, str]:
    """``twin_config`` of ``lm`` at ``TWIN_WIDTH``, narrowed by halves while the twin holds
    more than ``TWIN_PARAMETERS`` parameters and a narrower one exists (hundreds of experts in
    each layer: Qwen3-Next's 512), so that its whole-program check and float64 recheck fit a
    verification budget. Parameters counted on the meta device (no memory)."""
    import torch

    def parameters(config: Any) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in type(lm)(config).parameters())

    limit = TWIN_WIDTH
    config, what = twin_config(lm.config, limit)
    while parameters(config) > TWIN_PARAMETERS:
        narrower, described = twin_config(lm.config, limit // 2)
        if narrower.get_text_config().hidden_size == config.get_text_config().hidden_size:
            break  # as narrow as its heads allow (8 a head)
        limit //= 2
        config, what = narrower, described
    return config, what


def twin_step(lm: Any, phase: str, batch: int, source: str) -> tuple[Any, str]:
    """The step of ``lm``'s reduced twin (``twin_config``), built for real (random weights,
    ``torch.manual_seed(0)``), in ``lm``'s dtype, at ``batch`` and a context of
    ``TWIN_CONTEXT`` at most: ``(TorchCaptured, what was verified)``; a one-line
    ``AnalysisError`` when the twin cannot be built."""
    import torch

    from solar.torch.capture import TorchCaptured, capture

    config, what = twin_narrow_enough(lm)
    dtypes = [p.dtype for p in lm.parameters() if p.is_floating_point()]
    dtype = dtypes[0] if dtypes else torch.float32
    default = torch.get_default_dtype()
    try:
        torch.manual_seed(0)
        # Built in its dtype, not in float32 then cast: a bf16 model's twin holds half the
        # memory at its peak (DeepSeek-V3's 256-expert twin: 2.0 GB, not 3.8).
        if dtype in (torch.float16, torch.bfloat16, torch.float64):
            torch.set_default_dtype(dtype)
        twin = type(lm)(config).to(dtype).eval()
    except Exception as e:
        text = " ".join(str(e).split("\n")[0].split())[:160]
        raise AnalysisError(
            f"no reduced twin of {type(lm).__name__} could be built ({type(e).__name__}: {text})"
        ) from e
    finally:
        torch.set_default_dtype(default)
    context = min(
        TWIN_CONTEXT,
        int(getattr(config.get_text_config(), "max_position_embeddings", TWIN_CONTEXT)),
    )
    s = hf_step(twin, phase, batch, context)

    def recapture(m: Any, xs: tuple) -> Any:
        return capture(m, xs, source=source)

    captured = TorchCaptured(recapture(s.module, s.inputs), recapture, s.module, s.inputs)
    return captured, f"{what}, its {phase} step at batch {batch}, context {context}"
