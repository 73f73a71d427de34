"""gpt-oss-120b's published shape (transformers.GptOssForCausalLM from its config), in bf16 (the
release stores its experts in MXFP4: --policy mxfp4-weights prices them so): 36 layers
alternating sliding-window (128) and full attention, hidden 2880, 64 query heads and 8
key/value heads of 64 with attention sinks, 128 experts of width 2880 (clamped SwiGLU, biases),
top-4 routing, vocabulary 201088; eval mode. 117 G parameters, 234 GB of weights: only ever
built without them (``solar analyze --serve``, docs/serving.md, "Mixtures of experts")."""

import torch
from torch import nn
from transformers import GptOssConfig, GptOssForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = GptOssConfig(
            vocab_size=201088,
            hidden_size=2880,
            intermediate_size=2880,
            num_hidden_layers=36,
            num_attention_heads=64,
            num_key_value_heads=8,
            head_dim=64,
            num_local_experts=128,
            num_experts_per_tok=4,
            sliding_window=128,
            max_position_embeddings=131072,
            tie_word_embeddings=False,
        )
        self.lm = GptOssForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 201088, (1, 8))]


def get_init_inputs():
    return []
