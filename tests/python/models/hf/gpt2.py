"""GPT-2 (transformers.GPT2Model) from its config class, random weights: 2 layers, width E=32,
4 heads, MLP 4E, vocabulary 64; eval mode (no dropout); the last hidden state. B=2, T=8."""

import torch
from torch import nn
from transformers import GPT2Config, GPT2Model


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = GPT2Config(
            vocab_size=64,
            n_positions=16,
            n_embd=32,
            n_layer=2,
            n_head=4,
            bos_token_id=0,
            eos_token_id=0,
        )
        self.model = GPT2Model(config).eval()

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


def get_inputs():
    return [torch.randint(0, 64, (2, 8))]


def get_init_inputs():
    return []
