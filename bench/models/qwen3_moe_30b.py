"""Qwen3-30B-A3B's published shape (transformers.Qwen3MoeForCausalLM from its config), bf16: 48
layers, hidden 2048, 32 query heads and 4 key/value heads of 128, 128 experts of SwiGLU width
768, top-8 routing (probabilities renormalised), vocabulary 151936, rope theta 1e6; eval mode.
30.5 G parameters, 61 GB of weights: only ever built without them (``solar analyze --serve``,
docs/serving.md, "Mixtures of experts")."""

import torch
from torch import nn
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen3MoeConfig(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=6144,
            moe_intermediate_size=768,
            num_hidden_layers=48,
            num_attention_heads=32,
            num_key_value_heads=4,
            head_dim=128,
            num_experts=128,
            num_experts_per_tok=8,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            max_position_embeddings=40960,
            rope_theta=1000000.0,
            tie_word_embeddings=False,
        )
        self.lm = Qwen3MoeForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 151936, (1, 8))]


def get_init_inputs():
    return []
