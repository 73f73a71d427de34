"""A tiny Qwen3-MoE decoder (transformers.Qwen3MoeForCausalLM, bf16): 2 layers, width 64, 4 query
heads and 2 key/value heads of 16, 8 experts of SwiGLU width 32, top-2 routing, vocabulary 256.
Its experts run through torch's grouped product (aten._grouped_mm under export, as every
full-size bf16 MoE's do): tests/python/test_moe_routing.py."""

import torch
from torch import nn
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen3MoeConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            num_experts=8,
            num_experts_per_tok=2,
            max_position_embeddings=512,
            tie_word_embeddings=False,
        )
        self.lm = Qwen3MoeForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 256, (1, 8))]


def get_init_inputs():
    return []
