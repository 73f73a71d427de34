"""Mixtral-8x7B's published shape (transformers.MixtralForCausalLM from its config), bf16: 32
layers, hidden 4096, 32 query heads and 8 key/value heads of 128, 8 experts of SwiGLU width 14336,
top-2 routing, vocabulary 32000, rope theta 1e6; eval mode. 46.7 G parameters, 93 GB of weights:
only ever built without them (``solar analyze --serve``, docs/serving.md, "Mixtures of
experts")."""

import torch
from torch import nn
from transformers import MixtralConfig, MixtralForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = MixtralConfig(
            vocab_size=32000,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            num_local_experts=8,
            num_experts_per_tok=2,
            max_position_embeddings=32768,
            rope_theta=1000000.0,
            tie_word_embeddings=False,
        )
        self.lm = MixtralForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 32000, (1, 8))]


def get_init_inputs():
    return []
