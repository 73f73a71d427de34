"""A small Llama-style causal LM (transformers.LlamaForCausalLM) from its config, random weights,
bf16, for serving in parallel (docs/serving.md, "Serving in parallel"): 2 layers, hidden 256,
8 query heads and 4 key/value heads of 32 (grouped-query attention; tp=2 and tp=4 give each
device whole heads), SwiGLU MLP 512, vocabulary 1024, untied embeddings; eval mode.
``get_inputs()`` is one plain forward of 2 x 8 tokens (``solar analyze`` without --serve)."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            vocab_size=1024,
            hidden_size=256,
            intermediate_size=512,
            num_hidden_layers=2,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=32,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        )
        self.lm = LlamaForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 1024, (2, 8))]


def get_init_inputs():
    return []
