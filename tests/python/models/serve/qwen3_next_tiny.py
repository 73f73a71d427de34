"""A tiny Qwen3-Next decoder (transformers.Qwen3NextForCausalLM, float32): a hybrid of 2 layers,
the first Gated DeltaNet linear attention (2 key heads and 4 value heads of 16, a causal
convolution of 4 taps over the 128 channels of q, k and v), the second full attention (4 query
heads and 2 key/value heads of 16, a gated output, a quarter of each head rotated); dense SwiGLU
MLPs of width 128 in both (``mlp_only_layers``), vocabulary 256. Its serving step reads and
writes each layer's state: keys and values, or a convolution and a recurrent state
(tests/python/test_hybrid_serving.py)."""

import torch
from torch import nn
from transformers import Qwen3NextConfig, Qwen3NextForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = Qwen3NextConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            layer_types=["linear_attention", "full_attention"],
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            linear_num_key_heads=2,
            linear_num_value_heads=4,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
            linear_conv_kernel_dim=4,
            mlp_only_layers=[0, 1],
            tie_word_embeddings=False,
        )
        self.lm = Qwen3NextForCausalLM(config).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 256, (1, 8))]


def get_init_inputs():
    return []
