"""A small DeepSeek-style decoder with multi-head latent attention (MLA), written for SOLAR's
serving convention (docs/serving.md): ``get_serve_inputs(phase, batch, context)`` gives one
step's inputs, and the cache is an explicit input: per layer, the latent ``c`` (rank 64) and
the shared rotary key part ``kr`` (32) of the tokens before the step. The step returns the last
token's logits and the new tokens' ``c`` and ``kr`` rows.

bf16, 2 layers, hidden 256, 4 heads; per head a query/key of 64 + 32 (no-rope + rope parts)
and a value of 64; keys and values are up-projected from the latent (W_uk 64 x 4*64, W_uv
64 x 4*64), written naively (the contraction-order insight absorbs them); SwiGLU MLP 512,
RMSNorm, vocabulary 1000. Rotary embeddings are left out (elementwise work on 32 dims of q and
kr: no effect on the bytes and little on the counts)."""

import math

import torch
from torch import nn
from torch.nn import functional

D, H, DN, DR, DV, R, FF, V, LAYERS = 256, 4, 64, 32, 64, 64, 512, 1000, 2


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x32.to(x.dtype)


class MLA(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(D, H * (DN + DR), bias=False)
        self.dkv = nn.Linear(D, R, bias=False)  # down-projection to the latent
        self.kr = nn.Linear(D, DR, bias=False)  # the shared rotary key part
        self.kv_norm = RMSNorm(R)
        self.uk = nn.Linear(R, H * DN, bias=False)  # up-projections
        self.uv = nn.Linear(R, H * DV, bias=False)
        self.o = nn.Linear(H * DV, D, bias=False)

    def forward(self, x, past):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, H, DN + DR).transpose(1, 2)  # [b, H, t, DN+DR]
        c_new = self.kv_norm(self.dkv(x))  # [b, t, R]
        kr_new = self.kr(x)  # [b, t, DR]
        c, kr = c_new, kr_new
        if past is not None:
            c = torch.cat([past[0], c_new], dim=1)
            kr = torch.cat([past[1], kr_new], dim=1)
        s = c.shape[1]
        k_nope = self.uk(c).view(b, s, H, DN).transpose(1, 2)  # [b, H, s, DN]
        k_rope = kr.unsqueeze(1).expand(b, H, s, DR)
        k = torch.cat([k_nope, k_rope], dim=-1)
        v = self.uv(c).view(b, s, H, DV).transpose(1, 2)
        out = functional.scaled_dot_product_attention(
            q, k, v, is_causal=past is None and t > 1, scale=1 / math.sqrt(DN + DR)
        )
        return self.o(out.transpose(1, 2).reshape(b, t, H * DV)), c_new, kr_new


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = RMSNorm(D)
        self.attn = MLA()
        self.mlp_norm = RMSNorm(D)
        self.gate = nn.Linear(D, FF, bias=False)
        self.up = nn.Linear(D, FF, bias=False)
        self.down = nn.Linear(FF, D, bias=False)

    def forward(self, x, past):
        a, c, kr = self.attn(self.attn_norm(x), past)
        x = x + a
        h = self.mlp_norm(x)
        return x + self.down(functional.silu(self.gate(h)) * self.up(h)), c, kr


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        self.to(torch.bfloat16).eval()

    def forward(self, tokens, *cache):
        """``cache``: per layer ``c`` [B, T_past, 64] and ``kr`` [B, T_past, 32]; none in
        prefill. Returns the last token's logits and each layer's new ``c`` and ``kr`` rows."""
        x = self.embed(tokens)
        new = []
        for i, block in enumerate(self.blocks):
            past = (cache[2 * i], cache[2 * i + 1]) if cache else None
            x, c, kr = block(x, past)
            new += [c, kr]
        return (self.head(self.norm(x[:, -1:])), *new)


def get_serve_inputs(phase, batch, context):
    """Decode: ``batch`` new tokens and the latent cache of the ``context - 1`` tokens before
    them; prefill: ``batch`` x ``context`` prompt tokens and no cache."""
    if phase == "prefill":
        return [torch.randint(0, V, (batch, context))]
    cache = []
    for _ in range(LAYERS):
        cache.append(torch.randn(batch, context - 1, R).to(torch.bfloat16))
        cache.append(torch.randn(batch, context - 1, DR).to(torch.bfloat16))
    return [torch.randint(0, V, (batch, 1)), *cache]


def get_inputs():
    return get_serve_inputs("prefill", 2, 8)


def get_init_inputs():
    return []
