"""Llama-3-8B's published shape (transformers.LlamaForCausalLM from its config), bf16: 32 layers,
hidden 4096, 32 query heads and 8 key/value heads of 128, SwiGLU MLP 14336, vocabulary 128256,
untied embeddings, rope theta 500000; eval mode. Its weights are 16 GB: ``solar analyze
--serve`` builds it without them (docs/serving.md, "No weight memory"); never build it for
real on a small machine."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            vocab_size=128256,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
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
