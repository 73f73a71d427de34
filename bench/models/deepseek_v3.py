"""DeepSeek-V3's published shape (transformers.DeepseekV3ForCausalLM from its config), in bf16 (the
release stores fp8 weights: --policy fp8-weights prices them so): 61 layers, hidden 7168, MLA
attention (128 heads, q rank 1536, kv rank 512, nope 128 + rope 64 per head, values 128), the
first 3 layers dense (SwiGLU 18432), the other 58 a shared expert and 256 routed experts of
SwiGLU width 2048, top-8 of 8 groups' best 4 (sigmoid scores, scaled 2.5), vocabulary 129280;
eval mode. 671 G parameters, 1.34 TB of weights: only ever built without them (``solar analyze
--serve``, docs/serving.md, "Mixtures of experts")."""

import torch
from torch import nn
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM


def published_config() -> DeepseekV3Config:
    """The published configuration (also read by tests/python/test_noweights.py)."""
    return DeepseekV3Config(
        vocab_size=129280,
        hidden_size=7168,
        intermediate_size=18432,
        moe_intermediate_size=2048,
        num_hidden_layers=61,
        num_attention_heads=128,
        num_key_value_heads=128,
        n_shared_experts=1,
        n_routed_experts=256,
        routed_scaling_factor=2.5,
        kv_lora_rank=512,
        q_lora_rank=1536,
        qk_rope_head_dim=64,
        v_head_dim=128,
        qk_nope_head_dim=128,
        n_group=8,
        topk_group=4,
        num_experts_per_tok=8,
        first_k_dense_replace=3,
        norm_topk_prob=True,
        max_position_embeddings=163840,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = DeepseekV3ForCausalLM(published_config()).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 129280, (1, 8))]


def get_init_inputs():
    return []
