"""Llama-3-70B's published shape (transformers.LlamaForCausalLM from its config), bf16: 80 layers,
hidden 8192, 64 query heads and 8 key/value heads of 128, SwiGLU MLP 28672, vocabulary 128256,
untied embeddings, rope theta 500000; eval mode. 70.55 G parameters, 141 GB of weights: only
ever built without them (``solar analyze --serve``, bench/noweights_bench.py)."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            vocab_size=128256,
            hidden_size=8192,
            intermediate_size=28672,
            num_hidden_layers=80,
            num_attention_heads=64,
            num_key_value_heads=8,
            max_position_embeddings=8192,
            rope_theta=500000.0,
            tie_word_embeddings=False,
        )
        self.lm = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 128256, (1, 8))]


def get_init_inputs():
    return []
