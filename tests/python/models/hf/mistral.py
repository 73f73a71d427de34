"""Mistral (transformers.MistralModel) from its config class, random weights: 2 layers, hidden
32, 4 query heads and 2 key/value heads, MLP 64, vocabulary 64; eval mode; the last hidden
state. B=2, T=8, a sliding window of 4 tokens (shorter than the sequence, so it masks): its
mask is `&` of boolean tensors (aten.bitwise_and.Tensor, docs/lowering.md "Bitwise operations")."""

import torch
from torch import nn
from transformers import MistralConfig, MistralModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = MistralConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=16,
            sliding_window=4,
        )
        self.model = MistralModel(config).eval()

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


def get_inputs():
    return [torch.randint(0, 64, (2, 8))]


def get_init_inputs():
    return []
