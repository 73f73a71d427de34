"""BERT (transformers.BertModel) from its config class, random weights: 2 layers, hidden 32,
4 heads, intermediate 64, vocabulary 64; eval mode; the last hidden state and the pooled
output. B=2, T=8, no padding."""

import torch
from torch import nn
from transformers import BertConfig, BertModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = BertConfig(
            vocab_size=64,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=16,
        )
        self.model = BertModel(config).eval()

    def forward(self, input_ids):
        out = self.model(input_ids=input_ids)
        return out.last_hidden_state, out.pooler_output


def get_inputs():
    return [torch.randint(0, 64, (2, 8))]


def get_init_inputs():
    return []
