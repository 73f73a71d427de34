"""The Llama-style causal LM of llama_gqa.py (2 layers, hidden 256, 4 query and 2 key/value
heads of 64, SwiGLU 512, vocabulary 1000) in float32: PyTorch runs its matmuls on the CUDA
cores (pytorch-cuda-default), whose ridge point on an H100 is 20 FLOP/byte, so its decode step
turns compute bound at a batch of a few dozen (tests/python/test_serving.py)."""

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
        self.lm = LlamaForCausalLM(config).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 1000, (2, 8))]


def get_init_inputs():
    return []
