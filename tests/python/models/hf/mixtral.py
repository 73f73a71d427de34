"""Mixtral (transformers.MixtralModel) from its config class, random weights: 2 layers, hidden
32, 4 query heads and 2 key/value heads, a sparse MoE MLP of 4 experts (64 wide) with top-2
routing, vocabulary 64, no sliding window; eval mode; the last hidden state. B=2, T=8."""

import torch
from torch import nn
from transformers import MixtralConfig, MixtralModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = MixtralConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
            max_position_embeddings=16,
            sliding_window=None,
        )
        self.model = MixtralModel(config).eval()

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


def get_inputs():
    return [torch.randint(0, 64, (2, 8))]


def get_init_inputs():
    return []
