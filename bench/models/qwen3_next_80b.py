"""Qwen3-Next-80B-A3B's published shape (transformers.Qwen3NextForCausalLM from its config; the
values are Qwen/Qwen3-Next-80B-A3B-Instruct's config.json, which transformers' Qwen3NextConfig
documents as its defaults), bf16: 48 layers, hidden 2048; every fourth layer full attention
(16 query heads and 2 key/value heads of 256, a quarter of each head rotated, gated output), the
other 36 Gated DeltaNet linear attention (16 key heads and 32 value heads of 128, a causal
convolution of 4 taps); 512 experts of SwiGLU width 512, top-10 routing (renormalised), a shared
expert of width 512; vocabulary 151936; eval mode. About 80 G parameters, 160 GB of weights:
only ever built without them (``solar analyze --serve``, docs/serving.md, "Hybrid decoders")."""

import torch
from torch import nn
from transformers import Qwen3NextConfig, Qwen3NextForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen3NextConfig(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=5120,
            num_hidden_layers=48,
            num_attention_heads=16,
            num_key_value_heads=2,
            head_dim=256,
            partial_rotary_factor=0.25,
            linear_conv_kernel_dim=4,
            linear_key_head_dim=128,
            linear_value_head_dim=128,
            linear_num_key_heads=16,
            linear_num_value_heads=32,
            moe_intermediate_size=512,
            shared_expert_intermediate_size=512,
            num_experts=512,
            num_experts_per_tok=10,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            max_position_embeddings=262144,
            rope_theta=10000000.0,
            tie_word_embeddings=False,
        )
        self.lm = Qwen3NextForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 151936, (1, 8))]


def get_init_inputs():
    return []
