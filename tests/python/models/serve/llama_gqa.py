"""A small Llama-style causal LM (transformers.LlamaForCausalLM) from its config, random weights,
bf16: 2 layers, hidden 256, 4 query heads and 2 key/value heads of 64 (grouped-query
attention), SwiGLU MLP 512, vocabulary 1000, untied embeddings; eval mode. For
``solar analyze --serve``: SOLAR builds the prefill and decode steps itself (docs/serving.md).
``get_inputs()`` is one plain forward of 2 x 8 tokens (``solar analyze`` without --serve)."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            vocab_size=1000,
            hidden_size=256,
            intermediate_size=512,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        )
        self.lm = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 1000, (2, 8))]


def get_init_inputs():
    return []
