"""A whole kernel-benchmark suite through ``solar analyze`` (docs/benchmarks.md, "A whole suite";
issue 28 item 2: 250 definitions, 4,000 workloads, under 90 minutes on 2 cores).

``generate OUT``: writes a suite of this script's own definitions in FlashInfer-Bench's format
(``OUT/NNN_name/definition.json`` + ``workload.jsonl``): 250 definitions of 16 workloads each,
across the families a real suite has, at LLM-serving sizes (the shapes of Llama-3 8B/70B,
Qwen2 7B/72B, Mixtral and DeepSeek-V3 layers; batch sizes 1 to 512, sequences up to 8k tokens):

- dense GEMMs (bf16, fp16, fp32; with and without bias), fp8 GEMMs with 128x128 block scales,
  packed fp4 (``float4_e2m1fn_x2``) GEMMs with fp8 block scales per 16 values;
- attention: decode over a paged KV cache (block tables), prefill over a paged KV cache with a
  ragged batch (``qo_indptr``, ``kv_indptr``: per-sequence lengths), variable-length attention
  over ``cu_seqlens``;
- RMSNorm, fused add + RMSNorm, LayerNorm; RoPE (cos/sin cache indexed by positions);
- sampling: softmax with temperature, top-k and top-p filtering;
- MoE: routing (softmax, top-k, renormalise) and grouped expert GEMMs over a token-to-expert
  assignment;
- activations (silu_and_mul, gelu_and_mul, gelu_tanh) and reductions (sum, max, logsumexp,
  argmax over the vocabulary).

``run SUITE [--every N] [--jobs 2] [--out DIR]``: analyses every N-th definition of SUITE (all:
``--every 1``), each as a user would, ``solar analyze DEF --csv DEF.csv --suite-only`` in its
own process (``--jobs`` at a time), or ``--one-process``: ``solar analyze SUITE --csv ...``
over a folder of links to them, in ``--jobs`` processes at once (process k takes every
jobs-th definition from the k-th: two halves on 2 cores); it writes ``DIR/times.csv`` (per
definition: wall seconds, exit code, the error's line, the stage seconds), ``DIR/*.csv`` (the
per-workload rows) and prints the totals, the load average before and after, and the
projection to the whole suite when a sample was run (labelled as one).

    export PYTHONPATH=$PWD/build/dev/pkg PATH=/work/bin:$PATH
    python3 bench/definition_suite_bench.py generate /tmp/suite
    python3 bench/definition_suite_bench.py run /tmp/suite --every 5 --out /tmp/suite-run
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

WORKLOADS = 16

# ---------------------------------------------------------------------------------------------
# Layer shapes (N, K) of served LLMs: fused QKV, output projection, fused gate/up, down; TP 1
# for the 7-8B models, TP 8 for the 70B ones.
LAYERS = {
    "llama3_8b": [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)],
    "llama3_70b_tp8": [(1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584)],
    "qwen2_7b": [(4608, 3584), (3584, 3584), (37888, 3584), (3584, 18944)],
    "qwen2_72b_tp8": [(1152, 8192), (8192, 1024), (7392, 8192), (8192, 3696)],
    "mixtral_attn": [(6144, 4096), (4096, 4096)],
    "deepseek_v3_tp8": [(2112, 7168), (7168, 2048), (4608, 7168), (7168, 2304)],
}
# Tokens per step of a serving engine: decode batches, then prefill chunks.
TOKENS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024]
HIDDEN = [2048, 2560, 3072, 3584, 4096, 5120, 7168, 8192]
VOCAB = [32000, 32064, 128256, 151936, 152064, 129280]
BATCH = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256]


def _axes(**kinds: Any) -> dict:
    out = {}
    for name, kind in kinds.items():
        if kind == "var":
            out[name] = {"type": "var"}
        elif isinstance(kind, int):
            out[name] = {"type": "const", "value": kind}
        else:
            out[name] = {"type": "expr", "expression": kind}
    return out


def _t(shape: list[str] | None, dtype: str) -> dict:
    return {"shape": shape, "dtype": dtype}


def _workloads(values: list[dict], inputs: dict, prefix: str) -> list[dict]:
    lines = []
    for i, axes in enumerate(values):
        tag = "-".join(f"{k}{v}" for k, v in axes.items())
        lines.append({"uuid": f"{prefix}-{i:02d}-{tag}", "axes": axes, "inputs": inputs})
    return lines


def _random(names: list[str], **extra: dict) -> dict:
    out = {n: {"type": "random"} for n in names}
    out.update(extra)
    return out


def _scalar(value: float) -> dict:
    return {"type": "scalar", "value": value}


CUSTOM = {"type": "custom"}

# ---------------------------------------------------------------------------------------------
# Families: each yields (name, definition, workloads)

GEMM_REF = "import torch\n\n\ndef run(A, B):\n    return torch.matmul(A, B.t())\n"
LINEAR_REF = (
    "import torch\nimport torch.nn.functional as F\n\n\n"
    "def run(A, B, bias):\n    return F.linear(A, B, bias)\n"
)


def gemms() -> list[tuple[str, dict, list]]:
    out = []
    dtypes = ["bfloat16", "float16", "bfloat16", "float32"]
    for m, (model, shapes) in enumerate(LAYERS.items()):
        for s, (n, k) in enumerate(shapes):
            for variant in range(3 if m < 2 else 2):
                dtype = dtypes[(s + variant) % len(dtypes)]
                bias = variant == 2
                name = f"gemm_{'linear_' if bias else ''}{dtype}_{model}_n{n}_k{k}"
                inputs = {"A": _t(["M", "K"], dtype), "B": _t(["N", "K"], dtype)}
                if bias:
                    inputs["bias"] = _t(["N"], dtype)
                definition = {
                    "name": name,
                    "op_type": "gemm",
                    "axes": _axes(M="var", N=n, K=k),
                    "inputs": inputs,
                    "outputs": {"C": _t(["M", "N"], dtype)},
                    "reference": LINEAR_REF if bias else GEMM_REF,
                }
                values = [{"M": t} for t in TOKENS]
                out.append((name, definition, _workloads(values, _random(list(inputs)), "m")))
    return out


FP8_REF = """import torch


def run(A, A_scale, B, B_scale):
    # DeepSeek-style block scales: A per token and 128-wide K block, B per 128x128 block
    M, K = A.shape
    N = B.shape[0]
    a = A.to(torch.float32).view(M, K // 128, 128) * A_scale.unsqueeze(-1)
    b = B.to(torch.float32).view(N // 128, 128, K // 128, 128) * B_scale[:, None, :, None]
    return torch.matmul(a.view(M, K), b.view(N, K).t()).to(torch.bfloat16)
"""

FP4_REF = """import torch


def unpack(x, rows, cols):
    # two e2m1 values a byte, low nibble first: sign, 2 exponent bits, 1 mantissa bit
    b = x.view(torch.uint8).to(torch.int32)
    nib = torch.stack([b & 15, b >> 4], dim=-1).view(rows, cols)
    sign = 1.0 - 2.0 * ((nib >> 3) & 1).to(torch.float32)
    e = ((nib >> 1) & 3).to(torch.float32)
    m = (nib & 1).to(torch.float32)
    mag = torch.where(e == 0, 0.5 * m, (1.0 + 0.5 * m) * torch.exp2(e - 1.0))
    return sign * mag


def run(A, A_scale, B, B_scale, alpha):
    M = A.shape[0]
    N = B.shape[0]
    K = A.shape[1] * 2
    a = unpack(A, M, K).view(M, K // 16, 16) * A_scale.to(torch.float32).unsqueeze(-1)
    b = unpack(B, N, K).view(N, K // 16, 16) * B_scale.to(torch.float32).unsqueeze(-1)
    return (torch.matmul(a.view(M, K), b.view(N, K).t()) * alpha).to(torch.bfloat16)
"""


def _scaled_gemm(
    name: str, op_type: str, axes: dict, tensors: dict, reference: str, scalars: dict
) -> tuple[str, dict, list]:
    """A GEMM of quantized A and B with their scales (random), C [M, N] in bf16, M over the
    tokens of ``TOKENS``."""
    definition = {
        "name": name,
        "op_type": op_type,
        "axes": axes,
        "inputs": tensors,
        "outputs": {"C": _t(["M", "N"], "bfloat16")},
        "reference": reference,
    }
    values = [{"M": t} for t in TOKENS]
    inputs = _random(["A", "A_scale", "B", "B_scale"], **scalars)
    return name, definition, _workloads(values, inputs, "m")


def quantized_gemms() -> list[tuple[str, dict, list]]:
    out = []
    shapes = [
        s
        for model in ("llama3_8b", "llama3_70b_tp8", "deepseek_v3_tp8", "qwen2_7b")
        for s in LAYERS[model]
    ]
    for n, k in shapes:  # 16 fp8 block-scaled
        n = n // 128 * 128
        tensors = {
            "A": _t(["M", "K"], "float8_e4m3fn"),
            "A_scale": _t(["M", "KB"], "float32"),
            "B": _t(["N", "K"], "float8_e4m3fn"),
            "B_scale": _t(["NB", "KB"], "float32"),
        }
        axes = _axes(M="var", N=n, K=k, KB=k // 128, NB=n // 128)
        out.append(
            _scaled_gemm(
                f"gemm_fp8_block128_n{n}_k{k}", "gemm_fp8_blockscale", axes, tensors, FP8_REF, {}
            )
        )
    for n, k in shapes[:10]:  # 10 packed fp4
        tensors = {
            "A": _t(["M", "K2"], "float4_e2m1fn_x2"),
            "A_scale": _t(["M", "KS"], "float8_e4m3fn"),
            "B": _t(["N", "K2"], "float4_e2m1fn_x2"),
            "B_scale": _t(["N", "KS"], "float8_e4m3fn"),
            "alpha": _t(None, "float32"),
        }
        axes = _axes(M="var", N=n, K=k, K2=k // 2, KS=k // 16)
        out.append(
            _scaled_gemm(
                f"gemm_nvfp4_n{n}_k{k}",
                "gemm_fp4",
                axes,
                tensors,
                FP4_REF,
                {"alpha": _scalar(0.0625)},
            )
        )
    return out


# (query heads, kv heads, head dim) of served models' attention (per GPU at their usual TP)
HEADS = [
    (32, 8, 128),
    (64, 8, 128),
    (8, 1, 128),
    (28, 4, 128),
    (16, 2, 128),
    (32, 32, 128),
    (40, 8, 128),
    (16, 16, 64),
    (12, 2, 128),
    (32, 4, 64),
]

DECODE_REF = """import torch


def block_tables(axes_and_scalars, device):
    b = axes_and_scalars["batch_size"]
    p = axes_and_scalars["pages_per_seq"]
    pages = torch.randperm(axes_and_scalars["num_pages"], device=device)[: b * p]
    return {"block_table": pages.view(b, p).to(torch.int32)}


def run(q, k_cache, v_cache, block_table, sm_scale):
    batch, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    pages = block_table.long()
    k = k_cache[pages].reshape(batch, -1, kv_heads, dim).float()
    v = v_cache[pages].reshape(batch, -1, kv_heads, dim).float()
    qg = q.float().view(batch, kv_heads, heads // kv_heads, dim)
    scores = torch.einsum("bgqd,btgd->bgqt", qg, k) * sm_scale
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bgqt,btgd->bgqd", probs, v)
    return out.reshape(batch, heads, dim).to(q.dtype)
"""

PREFILL_REF = """import torch


def ragged(axes_and_scalars, device):
    # batch_size sequences of q_len new tokens each on top of a cached prefix, in pages
    b = axes_and_scalars["batch_size"]
    q_len = axes_and_scalars["total_q"] // b
    pages_per_seq = axes_and_scalars["num_pages"] // b
    qo = torch.arange(b + 1, device=device, dtype=torch.int32) * q_len
    kv = torch.arange(b + 1, device=device, dtype=torch.int32) * pages_per_seq
    indices = torch.randperm(axes_and_scalars["num_pages"], device=device).to(torch.int32)
    return {"qo_indptr": qo, "kv_indptr": kv, "kv_indices": indices}


def run(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    heads, dim = q.shape[1], q.shape[2]
    page, kv_heads = k_cache.shape[1], k_cache.shape[2]
    outs = []
    for b in range(qo_indptr.shape[0] - 1):
        q0, q1 = int(qo_indptr[b]), int(qo_indptr[b + 1])
        p0, p1 = int(kv_indptr[b]), int(kv_indptr[b + 1])
        pages = kv_indices[p0:p1].long()
        k = k_cache[pages].reshape(-1, kv_heads, dim).float()
        v = v_cache[pages].reshape(-1, kv_heads, dim).float()
        qs = q[q0:q1].float()
        n_q, n_kv = q1 - q0, k.shape[0]
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
        s = torch.einsum("qhd,khd->hqk", qs, k) * sm_scale
        causal = torch.arange(n_kv)[None, :] > torch.arange(n_q)[:, None] + (n_kv - n_q)
        s = s.masked_fill(causal, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), v))
    return torch.cat(outs, dim=0).to(q.dtype)
"""

VARLEN_REF = """import torch


def seqlens(axes_and_scalars, device):
    # batch_size sequences splitting total_tokens: lengths 1, 2, 3, ... scaled to the total
    b = axes_and_scalars["batch_size"]
    total = axes_and_scalars["total_tokens"]
    base = torch.arange(1, b + 1, dtype=torch.float64)
    lengths = torch.floor(base / base.sum() * (total - b)).to(torch.int64) + 1
    lengths[-1] += total - int(lengths.sum())
    cu = torch.zeros(b + 1, dtype=torch.int32, device=device)
    cu[1:] = torch.cumsum(lengths, 0).to(torch.int32)
    return {"cu_seqlens": cu}


def run(q, k, v, cu_seqlens, sm_scale):
    outs = []
    for b in range(cu_seqlens.shape[0] - 1):
        s0, s1 = cu_seqlens[b].item(), cu_seqlens[b + 1].item()
        qs, ks, vs = q[s0:s1].float(), k[s0:s1].float(), v[s0:s1].float()
        rep = q.shape[1] // k.shape[1]
        ks = ks.repeat_interleave(rep, dim=1)
        vs = vs.repeat_interleave(rep, dim=1)
        s = torch.einsum("qhd,khd->hqk", qs, ks) * sm_scale
        n = s1 - s0
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), vs))
    return torch.cat(outs, dim=0).to(q.dtype)
"""


def _paged_cache(dtype: str) -> dict:
    shape = ["num_pages", "page_size", "num_kv_heads", "head_dim"]
    return {"k_cache": _t(shape, dtype), "v_cache": _t(shape, dtype)}


def _attention(
    name: str,
    op_type: str,
    heads: tuple,
    entry: str,
    inputs: dict,
    tokens: str,
    reference: str,
    dtype: str = "bfloat16",
) -> dict:
    """An attention definition: ``heads`` = (its own axes, query heads, kv heads, head dim),
    the custom entry point, the inputs before ``sm_scale``, the output [tokens, heads, dim]."""
    axes, h, kv, d = heads
    return {
        "name": name,
        "op_type": op_type,
        "axes": {**axes, **_axes(num_qo_heads=h, num_kv_heads=kv, head_dim=d)},
        "custom_inputs_entrypoint": entry,
        "inputs": {**inputs, "sm_scale": _t(None, "float32")},
        "outputs": {"out": _t([tokens, "num_qo_heads", "head_dim"], dtype)},
        "reference": reference,
    }


def attention() -> list[tuple[str, dict, list]]:
    out = []
    decode_shapes = [(b, p) for b in (1, 4, 16, 64) for p in (8, 32, 128, 256)]
    for i, (h, kv, d) in enumerate(HEADS[:8] * 3):  # 24 paged decode
        page = (16, 1, 32)[i // 8]
        dtype = "bfloat16" if i % 4 else "float16"
        name = f"paged_decode_h{h}_kv{kv}_d{d}_ps{page}_{dtype}"
        scale = d**-0.5
        axes = _axes(batch_size="var", pages_per_seq="var", num_pages="var", page_size=page)
        inputs = {
            "q": _t(["batch_size", "num_qo_heads", "head_dim"], dtype),
            **_paged_cache(dtype),
            "block_table": _t(["batch_size", "pages_per_seq"], "int32"),
        }
        definition = _attention(
            name,
            "gqa_paged_decode",
            (axes, h, kv, d),
            "block_tables",
            inputs,
            "batch_size",
            DECODE_REF,
            dtype,
        )
        values = []
        for b, p in decode_shapes:
            p = max(1, p * 16 // page // (4 if page == 1 else 1))  # tokens, not pages
            values.append({"batch_size": b, "pages_per_seq": p, "num_pages": b * p + 8})
        inputs = _random(["q", "k_cache", "v_cache"], block_table=CUSTOM, sm_scale=_scalar(scale))
        out.append((name, definition, _workloads(values, inputs, "decode")))
    prefill_shapes = [
        (b, q, t) for b in (1, 2, 4, 8) for q, t in ((16, 512), (64, 1024), (128, 2048), (256, 512))
    ]
    for i, (h, kv, d) in enumerate(HEADS[:9] * 2):  # 18 paged ragged prefill
        page = 16
        name = f"paged_prefill_ragged_h{h}_kv{kv}_d{d}_ps{page}_{i // 9}"
        axes = _axes(
            batch_size="var",
            total_q="var",
            num_pages="var",
            len_indptr="batch_size + 1",
            page_size=page,
        )
        inputs = {
            "q": _t(["total_q", "num_qo_heads", "head_dim"], "bfloat16"),
            **_paged_cache("bfloat16"),
            "qo_indptr": _t(["len_indptr"], "int32"),
            "kv_indptr": _t(["len_indptr"], "int32"),
            "kv_indices": _t(["num_pages"], "int32"),
        }
        definition = _attention(
            name,
            "gqa_ragged_paged_prefill",
            (axes, h, kv, d),
            "ragged",
            inputs,
            "total_q",
            PREFILL_REF,
        )
        values = [
            {"batch_size": b, "total_q": b * q, "num_pages": b * t // page}
            for b, q, t in prefill_shapes
        ]
        inputs = _random(
            ["q", "k_cache", "v_cache"],
            qo_indptr=CUSTOM,
            kv_indptr=CUSTOM,
            kv_indices=CUSTOM,
            sm_scale=_scalar(d**-0.5),
        )
        out.append((name, definition, _workloads(values, inputs, "prefill")))
    varlen_shapes = [(b, t) for b in (1, 2, 4, 8) for t in (128, 512, 1024, 2048)]
    for h, kv, d in HEADS:  # 10 varlen causal attention
        name = f"varlen_attention_h{h}_kv{kv}_d{d}"
        axes = _axes(batch_size="var", total_tokens="var", len_cu="batch_size + 1")
        inputs = {
            "q": _t(["total_tokens", "num_qo_heads", "head_dim"], "bfloat16"),
            "k": _t(["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
            "v": _t(["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
            "cu_seqlens": _t(["len_cu"], "int32"),
        }
        definition = _attention(
            name,
            "varlen_attention",
            (axes, h, kv, d),
            "seqlens",
            inputs,
            "total_tokens",
            VARLEN_REF,
        )
        values = [{"batch_size": b, "total_tokens": t} for b, t in varlen_shapes]
        inputs = _random(["q", "k", "v"], cu_seqlens=CUSTOM, sm_scale=_scalar(d**-0.5))
        out.append((name, definition, _workloads(values, inputs, "varlen")))
    return out


RMSNORM_REF = """import torch


def run(x, weight, eps):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weight.float()).to(x.dtype)
"""

ADD_RMSNORM_REF = """import torch


def run(x, residual, weight, eps):
    h = x.float() + residual.float()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weight.float()).to(x.dtype), h.to(x.dtype)
"""

LAYERNORM_REF = """import torch
import torch.nn.functional as F


def run(x, weight, bias, eps):
    return F.layer_norm(x.float(), (x.shape[-1],), weight.float(), bias.float(), eps).to(x.dtype)
"""

ROPE_REF = """import torch


def run(q, k, cos_sin_cache, positions):
    # neox style: the first and second halves of each head rotate together
    d = q.shape[-1]
    cs = cos_sin_cache[positions.long()].float()
    cos, sin = cs[:, None, : d // 2], cs[:, None, d // 2 :]

    def rotate(x):
        x = x.float()
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    return rotate(q).to(q.dtype), rotate(k).to(k.dtype)
"""


def norms_and_rope() -> list[tuple[str, dict, list]]:
    out = []
    tokens = [{"num_tokens": t} for t in TOKENS[:15] + [2048]]
    for dtype in ("bfloat16", "float16"):
        for hidden in HIDDEN[:6]:  # 12 RMSNorm, 12 fused add + RMSNorm, 6 LayerNorm
            common = {"axes": _axes(num_tokens="var", hidden_size=hidden)}
            x = _t(["num_tokens", "hidden_size"], dtype)
            w = _t(["hidden_size"], dtype)
            name = f"rmsnorm_h{hidden}_{dtype}"
            d = {
                "name": name,
                "op_type": "rmsnorm",
                **common,
                "inputs": {"x": x, "weight": w, "eps": _t(None, "float32")},
                "outputs": {"y": x},
                "reference": RMSNORM_REF,
            }
            out.append(
                (name, d, _workloads(tokens, _random(["x", "weight"], eps=_scalar(1e-6)), "t"))
            )
            name = f"fused_add_rmsnorm_h{hidden}_{dtype}"
            d = {
                "name": name,
                "op_type": "fused_add_rmsnorm",
                **common,
                "inputs": {"x": x, "residual": x, "weight": w, "eps": _t(None, "float32")},
                "outputs": {"y": x, "residual_out": x},
                "reference": ADD_RMSNORM_REF,
            }
            out.append(
                (
                    name,
                    d,
                    _workloads(
                        tokens, _random(["x", "residual", "weight"], eps=_scalar(1e-5)), "t"
                    ),
                )
            )
            if dtype == "bfloat16":
                name = f"layernorm_h{hidden}_{dtype}"
                d = {
                    "name": name,
                    "op_type": "layernorm",
                    **common,
                    "inputs": {"x": x, "weight": w, "bias": w, "eps": _t(None, "float32")},
                    "outputs": {"y": x},
                    "reference": LAYERNORM_REF,
                }
                out.append(
                    (
                        name,
                        d,
                        _workloads(
                            tokens, _random(["x", "weight", "bias"], eps=_scalar(1e-5)), "t"
                        ),
                    )
                )
    for h, kv, d in HEADS:  # 10 RoPE
        name = f"rope_neox_h{h}_kv{kv}_d{d}"
        definition = {
            "name": name,
            "op_type": "rope",
            "axes": _axes(
                num_tokens="var", num_qo_heads=h, num_kv_heads=kv, head_dim=d, max_position=8192
            ),
            "inputs": {
                "q": _t(["num_tokens", "num_qo_heads", "head_dim"], "bfloat16"),
                "k": _t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
                "cos_sin_cache": _t(["max_position", "head_dim"], "float32"),
                "positions": _t(["num_tokens"], "int64"),
            },
            "outputs": {
                "q_out": _t(["num_tokens", "num_qo_heads", "head_dim"], "bfloat16"),
                "k_out": _t(["num_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
            },
            "reference": ROPE_REF,
        }
        out.append(
            (
                name,
                definition,
                _workloads(tokens, _random(["q", "k", "cos_sin_cache", "positions"]), "t"),
            )
        )
    return out


SAMPLING_REFS = {
    "softmax_temperature": """import torch


def run(logits, temperature):
    return torch.softmax(logits.float() / temperature, dim=-1)
""",
    "top_k_mask": """import torch


def run(logits, top_k):
    # logits below the k-th largest of their row set to -inf, then softmax
    kth = torch.topk(logits.float(), top_k, dim=-1).values[:, -1:]
    masked = logits.float().masked_fill(logits.float() < kth, float("-inf"))
    return torch.softmax(masked, dim=-1)
""",
    "top_p_mask": """import torch


def run(logits, top_p):
    # nucleus: keep the smallest set of most probable tokens whose mass reaches top_p
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_p, order = torch.sort(probs, dim=-1, descending=True)
    cum = torch.cumsum(sorted_p, dim=-1)
    drop = (cum - sorted_p) > top_p
    sorted_p = sorted_p.masked_fill(drop, 0.0)
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return kept / kept.sum(-1, keepdim=True)
""",
    "greedy_argmax": """import torch


def run(logits, top_p):
    return torch.argmax(logits.float() * top_p, dim=-1).to(torch.int64)
""",
}


def sampling() -> list[tuple[str, dict, list]]:
    out = []
    batches = [{"batch_size": b} for b in BATCH]
    kinds = list(SAMPLING_REFS)
    for vocab in VOCAB[:5]:  # 20: 4 kinds x 5 vocabularies
        for kind in kinds:
            scalar_name = {"softmax_temperature": "temperature", "top_k_mask": "top_k"}.get(
                kind, "top_p"
            )
            value = {"temperature": 0.7, "top_k": 50, "top_p": 0.9}[scalar_name]
            dtype = "int64" if scalar_name == "top_k" else "float32"
            out_t = (
                _t(["batch_size"], "int64")
                if kind == "greedy_argmax"
                else _t(["batch_size", "vocab_size"], "float32")
            )
            name = f"sampling_{kind}_v{vocab}"
            definition = {
                "name": name,
                "op_type": "sampling",
                "axes": _axes(batch_size="var", vocab_size=vocab),
                "inputs": {
                    "logits": _t(["batch_size", "vocab_size"], "bfloat16"),
                    scalar_name: _t(None, dtype),
                },
                "outputs": {"out": out_t},
                "reference": SAMPLING_REFS[kind],
            }
            inputs = _random(["logits"], **{scalar_name: _scalar(value)})
            out.append((name, definition, _workloads(batches, inputs, "b")))
    return out


ROUTING_REF = """import torch


def run(router_logits, k):
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, ids = torch.topk(probs, k, dim=-1)
    weights = weights / weights.sum(-1, keepdim=True)
    return weights, ids.to(torch.int32)
"""

GROUPED_REF = """import torch
import torch.nn.functional as F


def assignment(axes_and_scalars, device):
    # every token to top_k distinct experts, drawn at random
    t, e, k = axes_and_scalars["num_tokens"], axes_and_scalars["num_experts"], 2
    ids = torch.stack([torch.randperm(e)[:k] for _ in range(t)]).to(torch.int32)
    return {"topk_ids": ids}


def run(x, w_gate_up, w_down, topk_ids, topk_weights):
    # each expert: silu(x W_gate) * (x W_up), then W_down, over the tokens routed to it
    out = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32)
    for e in range(w_gate_up.shape[0]):
        tok, slot = torch.nonzero(topk_ids == e, as_tuple=True)
        if tok.numel() == 0:
            continue
        h = x[tok].float() @ w_gate_up[e].float().t()
        g, u = h.chunk(2, dim=-1)
        y = (F.silu(g) * u) @ w_down[e].float().t()
        out.index_add_(0, tok, y * topk_weights[tok, slot].float()[:, None])
    return out.to(x.dtype)
"""


def moe() -> list[tuple[str, dict, list]]:
    out = []
    tokens = [{"num_tokens": t} for t in TOKENS]
    for experts, k in (
        (8, 2),
        (16, 2),
        (64, 6),
        (128, 8),
        (256, 8),
        (60, 4),
        (32, 4),
        (160, 6),
        (64, 8),
        (128, 4),
    ):  # 10 routing
        name = f"moe_routing_softmax_topk_e{experts}_k{k}"
        definition = {
            "name": name,
            "op_type": "moe_routing",
            "axes": _axes(num_tokens="var", num_experts=experts, top_k=k),
            "inputs": {
                "router_logits": _t(["num_tokens", "num_experts"], "bfloat16"),
                "k": _t(None, "int64"),
            },
            "outputs": {
                "weights": _t(["num_tokens", "top_k"], "float32"),
                "ids": _t(["num_tokens", "top_k"], "int32"),
            },
            "reference": ROUTING_REF,
        }
        inputs = _random(["router_logits"], k=_scalar(k))
        out.append((name, definition, _workloads(tokens, inputs, "t")))
    small = [{"num_tokens": t} for t in TOKENS[:16]]
    for experts, hidden, inter in (
        (8, 4096, 1792),
        (8, 2048, 1408),
        (16, 2048, 1024),
        (8, 3584, 2368),
        (32, 1024, 512),
        (8, 7168, 256),
        (16, 4096, 896),
        (8, 2560, 1536),
        (64, 2048, 176),
        (8, 5120, 1024),
    ):  # 10 grouped expert GEMMs
        name = f"moe_grouped_gemm_e{experts}_h{hidden}_i{inter}"
        definition = {
            "name": name,
            "op_type": "moe_grouped_gemm",
            "axes": _axes(
                num_tokens="var",
                num_experts=experts,
                hidden=hidden,
                inter2=2 * inter,
                inter=inter,
                top_k=2,
            ),
            "custom_inputs_entrypoint": "assignment",
            "inputs": {
                "x": _t(["num_tokens", "hidden"], "bfloat16"),
                "w_gate_up": _t(["num_experts", "inter2", "hidden"], "bfloat16"),
                "w_down": _t(["num_experts", "hidden", "inter"], "bfloat16"),
                "topk_ids": _t(["num_tokens", "top_k"], "int32"),
                "topk_weights": _t(["num_tokens", "top_k"], "float32"),
            },
            "outputs": {"y": _t(["num_tokens", "hidden"], "bfloat16")},
            "reference": GROUPED_REF,
        }
        inputs = _random(["x", "w_gate_up", "w_down", "topk_weights"], topk_ids=CUSTOM)
        out.append((name, definition, _workloads(small, inputs, "t")))
    return out


ACT_REFS = {
    "silu_and_mul": "import torch\nimport torch.nn.functional as F\n\n\ndef run(x):\n"
    "    d = x.shape[-1] // 2\n    return F.silu(x[..., :d]) * x[..., d:]\n",
    "gelu_and_mul": "import torch\nimport torch.nn.functional as F\n\n\ndef run(x):\n"
    "    d = x.shape[-1] // 2\n    return F.gelu(x[..., :d]) * x[..., d:]\n",
    "gelu_tanh_and_mul": "import torch\nimport torch.nn.functional as F\n\n\ndef run(x):\n"
    "    d = x.shape[-1] // 2\n    return F.gelu(x[..., :d], approximate='tanh') * x[..., d:]\n",
}

RED_REFS = {
    "row_sum": ("import torch\n\n\ndef run(x):\n    return x.float().sum(-1)\n", "float32"),
    "row_max": ("import torch\n\n\ndef run(x):\n    return x.amax(-1)\n", None),
    "logsumexp": (
        "import torch\n\n\ndef run(x):\n    return torch.logsumexp(x.float(), -1)\n",
        "float32",
    ),
    "argmax": ("import torch\n\n\ndef run(x):\n    return torch.argmax(x, -1)\n", "int64"),
}


def elementwise() -> list[tuple[str, dict, list]]:
    out = []
    tokens = [{"num_tokens": t} for t in TOKENS[:15] + [2048]]
    inters = [1408, 2048, 3584, 7168, 11008, 14336, 18944, 3696]
    for i, inter in enumerate(inters):  # 24 activations
        for kind, ref in ACT_REFS.items():
            dtype = "bfloat16" if i % 3 else "float16"
            name = f"{kind}_d{inter}_{dtype}"
            definition = {
                "name": name,
                "op_type": "activation",
                "axes": _axes(num_tokens="var", d=inter, d2=2 * inter),
                "inputs": {"x": _t(["num_tokens", "d2"], dtype)},
                "outputs": {"y": _t(["num_tokens", "d"], dtype)},
                "reference": ref,
            }
            out.append((name, definition, _workloads(tokens, _random(["x"]), "t")))
    batches = [{"rows": b} for b in BATCH]
    for width in (4096, 32000, 128256, 151936):  # 16 reductions
        for kind, (ref, out_dtype) in RED_REFS.items():
            name = f"reduce_{kind}_n{width}"
            definition = {
                "name": name,
                "op_type": "reduction",
                "axes": _axes(rows="var", n=width),
                "inputs": {"x": _t(["rows", "n"], "bfloat16")},
                "outputs": {"y": _t(["rows"], out_dtype or "bfloat16")},
                "reference": ref,
            }
            out.append((name, definition, _workloads(batches, _random(["x"]), "r")))
    return out


FAMILIES: list[Callable[[], list]] = [
    gemms,
    quantized_gemms,
    attention,
    norms_and_rope,
    sampling,
    moe,
    elementwise,
]


def suite() -> list[tuple[str, dict, list]]:
    """Every definition of the suite, in a fixed order (family by family)."""
    return [d for family in FAMILIES for d in family()]


def generate(folder: str) -> int:
    definitions = suite()
    names = [n for n, _, _ in definitions]
    assert len(set(names)) == len(names), "duplicate definition names"
    os.makedirs(folder, exist_ok=True)
    for i, (name, definition, workloads) in enumerate(definitions):
        assert len(workloads) == WORKLOADS, name
        sub = os.path.join(folder, f"{i:03d}_{name}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "definition.json"), "w") as f:
            json.dump(definition, f, indent=1)
            f.write("\n")
        with open(os.path.join(sub, "workload.jsonl"), "w") as f:
            for w in workloads:
                f.write(json.dumps(w, sort_keys=True) + "\n")
    return len(definitions)


# ---------------------------------------------------------------------------------------------
# Running


def _run_one(folder: str, out: str, solar: list[str], extra: list[str]) -> dict:
    """``solar analyze DEF --csv OUT/DEF.csv --suite-only`` in its own process."""
    name = os.path.basename(folder)
    csv_path = os.path.join(out, f"{name}.csv")
    cmd = [*solar, "analyze", folder, "--csv", csv_path, "--suite-only", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {
        "definition": name,
        "wall_s": round(wall, 2),
        "rc": proc.returncode,
        "error": lines[-1][:300] if proc.returncode and lines else "",
    }


def _family(folder: str) -> str:
    """A definition's family: its name's words before the first one holding a digit, without
    the leading index ("172_sampling_top_p_mask_v32000": "sampling_top_p_mask")."""
    words = os.path.basename(folder).split("_")[1:]
    family = []
    for w in words:
        if any(c.isdigit() for c in w):
            break
        family.append(w)
    return "_".join(family)


def _parts(folders: list[str], jobs: int) -> list[list[str]]:
    """The definitions each of ``jobs`` processes analyses with ``--one-process``: each family
    dealt out in turn (by family, then name), so that every process gets its share of every
    family. Taking every jobs-th definition by name put a family whose kinds alternate with a
    period dividing ``jobs`` in one process (all five top-p masks, the sampling family's third
    kind of four, fell to process 0)."""
    parts: list[list[str]] = [[] for _ in range(jobs)]
    for k, f in enumerate(sorted(folders, key=lambda f: (_family(f), f))):
        parts[k % jobs].append(f)
    return [sorted(p) for p in parts]


def _run_together(
    chosen: list[str], out: str, solar: list[str], extra: list[str], part: int = 0
) -> list[dict]:
    """``solar analyze SUITE`` over the chosen definitions (a folder of links to them) in one
    process; the per-definition seconds from its ``--stage-times``."""
    together = os.path.join(out, f"suite{part}")
    os.makedirs(together, exist_ok=True)
    for folder in chosen:
        link = os.path.join(together, os.path.basename(folder))
        if not os.path.exists(link):
            os.symlink(os.path.abspath(folder), link)
    stages = os.path.join(out, f"stages{part}.json")
    cmd = [*solar, "analyze", together, "--csv", os.path.join(out, f"suite{part}.csv")]
    cmd += ["--suite-only", "--stage-times", stages, *extra]
    with open(os.path.join(out, f"stdout{part}.txt"), "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, check=False)
    errors: dict[str, str] = {}
    for line in proc.stderr.splitlines():
        for folder in chosen:
            name = os.path.basename(folder)
            if name in line:
                errors.setdefault(name, line[:300])
    with open(stages) as f:
        per = json.load(f)["definitions"]
    rows = []
    for path, times in per.items():
        name = os.path.basename(path)
        stage_seconds = {f"{k}_s": round(v, 2) for k, v in times.items() if k != "total"}
        rows.append(
            {
                "definition": name,
                "wall_s": round(times["total"], 2),
                "rc": 1 if name in errors else 0,
                "error": errors.get(name, ""),
                **stage_seconds,
            }
        )
        print(f"{times['total']:7.1f} s {name} {errors.get(name, '')}", flush=True)
    return rows


def run(args: argparse.Namespace) -> None:
    folders = sorted(
        os.path.join(args.suite, d)
        for d in os.listdir(args.suite)
        if os.path.isfile(os.path.join(args.suite, d, "definition.json"))
    )
    chosen = folders[args.offset :: args.every]
    os.makedirs(args.out, exist_ok=True)
    solar = [sys.executable, "-m", "solar"]
    extra = args.extra.split() if args.extra else []
    load_before = os.getloadavg()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rows: list[dict] = []
    if args.one_process:  # --jobs processes, each a suite of its part of the definitions
        split = _parts(chosen, args.jobs)
        with ThreadPoolExecutor(args.jobs) as pool:
            parts = pool.map(
                lambda k: _run_together(split[k], args.out, solar, extra, k), range(args.jobs)
            )
            rows = [row for part in parts for row in part]
    else:
        with ThreadPoolExecutor(args.jobs) as pool:
            for row in pool.map(lambda f: _run_one(f, args.out, solar, extra), chosen):
                rows.append(row)
                print(
                    f"{row['wall_s']:7.1f} s rc={row['rc']} {row['definition']} {row['error']}",
                    flush=True,
                )
    wall = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    load_after = os.getloadavg()
    with open(os.path.join(args.out, "times.csv"), "w", newline="") as f:
        fields = list(dict.fromkeys(k for row in rows for k in row))
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    workloads = 0
    verified: dict[str, int] = {}
    if args.one_process:
        paths = [os.path.join(args.out, f"suite{k}.csv") for k in range(args.jobs)]
    else:
        paths = [os.path.join(args.out, f"{row['definition']}.csv") for row in rows]
    for path in paths:
        if os.path.isfile(path):
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    workloads += 1
                    verified[r["verification"]] = verified.get(r["verification"], 0) + 1
    failed = sum(1 for r in rows if r["rc"] != 0)
    how = f"{args.jobs} process(es) in all" if args.one_process else "one process a definition"
    how += f", {args.jobs} at a time"
    print(
        f"definitions: {len(rows)} of {len(folders)} (every {args.every}, from {args.offset})"
        f"; failed: {failed}; workloads analysed: {workloads}; verification: {verified}"
    )
    print(f"{how}: wall {wall:.1f} s, CPU {cpu:.1f} s (user+sys of the children)")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    if len(rows) < len(folders):
        scale = len(folders) / len(rows)
        print(
            f"PROJECTION (a sample of {len(rows)}, scaled by {scale:.2f}): the whole suite "
            f"{wall * scale / 60:.1f} min wall, {cpu * scale / 60:.1f} min CPU"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("folder")
    r = sub.add_parser("run")
    r.add_argument("suite")
    r.add_argument("--every", type=int, default=1)
    r.add_argument("--offset", type=int, default=0)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--out", default="suite-run")
    r.add_argument("--one-process", action="store_true")
    r.add_argument("--extra", default="", help="more options for solar analyze")
    args = p.parse_args()
    if args.command == "generate":
        print(f"{generate(args.folder)} definitions, {WORKLOADS} workloads each")
    else:
        run(args)


if __name__ == "__main__":
    main()
