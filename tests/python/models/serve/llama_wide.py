"""A Llama-style causal LM (transformers.LlamaForCausalLM) wider than SOLAR's reduced twin, bf16:
4 layers, hidden 1024, 16 query heads and 4 key/value heads of 64, SwiGLU MLP 2048,
vocabulary 2048, untied embeddings; eval mode. Built for real it takes about 170 MB (float32
before the cast): with a smaller --verify-budget-mb, ``solar analyze --serve`` verifies it on
its reduced twin (docs/serving.md, "Verification on a reduced twin")."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            vocab_size=2048,
            hidden_size=1024,
            intermediate_size=2048,
            num_hidden_layers=4,
            num_attention_heads=16,
            num_key_value_heads=4,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        )
        self.lm = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 2048, (2, 8))]


def get_init_inputs():
    return []
