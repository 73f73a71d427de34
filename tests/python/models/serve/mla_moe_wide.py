"""A DeepSeek-V3-style causal LM (transformers.DeepseekV3ForCausalLM) wider than SOLAR's reduced
twin, bf16: 3 layers (the first dense), hidden 1024, 16 heads of multi-head latent attention
(q rank 256, kv rank 128, no-position 64 + rotary 32 per head, values 64; the config's head_dim
is the rotary width, 32, not hidden / heads), 16 routed experts of SwiGLU 128 and a shared one,
top-4 of 4 groups' best 2 (sigmoid scores), vocabulary 2048; eval mode. With a small
--verify-budget-mb ``solar analyze --serve`` verifies it on its reduced twin (docs/serving.md,
"Verification on a reduced twin")."""

import torch
from torch import nn
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = DeepseekV3Config(
            vocab_size=2048,
            hidden_size=1024,
            intermediate_size=1024,
            moe_intermediate_size=128,
            num_hidden_layers=3,
            num_attention_heads=16,
            num_key_value_heads=16,
            n_shared_experts=1,
            n_routed_experts=16,
            routed_scaling_factor=2.5,
            kv_lora_rank=128,
            q_lora_rank=256,
            qk_rope_head_dim=32,
            v_head_dim=64,
            qk_nope_head_dim=64,
            n_group=4,
            topk_group=2,
            num_experts_per_tok=4,
            first_k_dense_replace=1,
            norm_topk_prob=True,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        )
        self.lm = DeepseekV3ForCausalLM(config).to(torch.bfloat16).eval()

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def get_inputs():
    return [torch.randint(0, 2048, (1, 8))]


def get_init_inputs():
    return []
