"""A Llama-shaped decoder with a static KV cache, for the serving steps of
``bench/gpu_validate.py time`` (timed with PyTorch alone) and ``compare`` (``solar analyze
--serve``, docs/serving.md: this file defines ``get_serve_inputs``).

bf16; per layer: RMSNorm, grouped-query attention (``SIZES``: query heads, fewer key/value heads,
rotary embeddings on q and k, ``scaled_dot_product_attention(..., enable_gqa=True)``), RMSNorm,
SwiGLU MLP; a final RMSNorm and a language-model head applied to the last token only. The cache
is preallocated, one tensor of keys and one of values per layer, ``[batch, kv_heads, context,
head_dim]``, inputs of ``forward``: a step of ``s`` new tokens writes their keys and values in
place into the last ``s`` rows (``k_cache[:, :, T - s:] = k``) and attends to all ``T`` rows.
Decode: ``s = 1`` at position ``T - 1``; prefill: ``s = T`` from position 0, causal. A serving
engine's static cache is updated the same way (no concatenation, no copy of the cache); SOLAR
counts the in-place write as the rows written (docs/capture.md, "In-place updates of inputs").
(One tensor for all layers, written as ``cache[layer, :, :, T - s:] = k``, is counted by SOLAR
as a write of the whole cache: twice the cache's bytes in a decode step.)

``SIZE`` picks the shape; ``gpu_validate.py time --serving-size`` writes a copy of this file with
that line changed (``serving_model.py`` in the results), so that ``compare`` analyses exactly
what was timed. ``small`` (the default) has 8 layers of hidden 2,048 (16 query heads and 4
key/value heads of 128, MLP 5,632) and a vocabulary of 32,000: 492 M parameters, 0.98 GB in
bf16. ``tiny`` is for tests on the CPU.
"""

import torch
from torch import nn
from torch.nn import functional

SIZE = "small"
SIZES = {
    "small": {
        "hidden": 2048,
        "layers": 8,
        "heads": 16,
        "kv_heads": 4,
        "head_dim": 128,
        "ffn": 5632,
        "vocab": 32000,
    },
    "tiny": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 16, "ffn": 128,
             "vocab": 256},
}  # fmt: skip
ROPE_THETA = 10000.0


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x32.to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of ``x`` [b, heads, s, d] (the halves convention of Llama)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["heads"], c["kv_heads"], c["head_dim"]
        self.q = nn.Linear(c["hidden"], c["heads"] * c["head_dim"], bias=False)
        self.k = nn.Linear(c["hidden"], c["kv_heads"] * c["head_dim"], bias=False)
        self.v = nn.Linear(c["hidden"], c["kv_heads"] * c["head_dim"], bias=False)
        self.o = nn.Linear(c["heads"] * c["head_dim"], c["hidden"], bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache) -> torch.Tensor:
        b, s, _ = x.shape
        t = k_cache.shape[2]
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k_cache[:, :, t - s :] = k  # the static cache, written in place
        v_cache[:, :, t - s :] = v
        out = functional.scaled_dot_product_attention(
            q, k_cache, v_cache, is_causal=s > 1, enable_gqa=True
        )
        return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class Block(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(c["hidden"])
        self.attn = Attention(c)
        self.mlp_norm = RMSNorm(c["hidden"])
        self.gate = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.up = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.down = nn.Linear(c["ffn"], c["hidden"], bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, k_cache, v_cache)
        h = self.mlp_norm(x)
        return x + self.down(functional.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self, size: str = SIZE) -> None:
        super().__init__()
        c = SIZES[size]
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.to(torch.bfloat16).eval()
        steps = torch.arange(0, c["head_dim"], 2, dtype=torch.float32) / c["head_dim"]
        self.register_buffer("inv_freq", 1.0 / ROPE_THETA**steps, persistent=False)

    def forward(self, tokens, *cache) -> torch.Tensor:
        """``tokens`` [B, s]; ``cache``: per layer its keys and its values [B, kv_heads, T,
        head_dim], the step's rows among them written here. Returns the last token's logits
        [B, 1, vocab]."""
        s, t = tokens.shape[1], cache[0].shape[2]
        if s not in (1, t):
            raise ValueError(f"a step is one token (decode) or the whole context (prefill): {s}")
        positions = torch.arange(t - s, t, device=tokens.device, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat([freqs, freqs], dim=-1)
        x = self.embed(tokens)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        for layer, block in enumerate(self.blocks):
            x = block(x, cos, sin, cache[2 * layer], cache[2 * layer + 1])
        return self.head(self.norm(x[:, -1:]))


def get_serve_inputs(phase: str, batch: int, context: int) -> list:
    """One step's inputs: decode, ``batch`` tokens at position ``context - 1`` and a cache of
    ``context`` rows (the ``context - 1`` before them random, the last one written by the
    step); prefill, ``batch`` x ``context`` tokens and an empty cache of ``context`` rows."""
    c = SIZES[SIZE]
    new = context if phase == "prefill" else 1
    shape = (batch, c["kv_heads"], context, c["head_dim"])
    make = torch.zeros if phase == "prefill" else torch.randn
    cache = [make(shape, dtype=torch.bfloat16) for _ in range(2 * c["layers"])]
    return [torch.randint(0, c["vocab"], (batch, new)), *cache]


def get_inputs() -> list:
    return get_serve_inputs("decode", 1, 64)


def get_init_inputs() -> list:
    return []
