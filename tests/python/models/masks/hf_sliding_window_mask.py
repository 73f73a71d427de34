"""An additive attention mask as decoder references prepare it: a causal mask with a sliding
window in the model's dtype (the dtype's minimum where a query may not look), the padding of
each sequence added in, then one copy per head for a kernel that takes [B, H, L, L]."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, num_heads: int, sliding_window: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.sliding_window = sliding_window

    def forward(self, attention_mask: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len = attention_mask.shape
        dtype = torch.float32
        min_value = torch.finfo(dtype).min
        cache_position = torch.arange(seq_len)
        causal_mask = torch.full((seq_len, seq_len), fill_value=min_value, dtype=dtype)
        causal_mask = torch.triu(causal_mask, diagonal=1)
        too_old = cache_position[None, :] <= cache_position[:, None] - self.sliding_window
        causal_mask = causal_mask.masked_fill(too_old, min_value)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1).clone()
        padding_mask = causal_mask + attention_mask[:, None, None, :].to(dtype)
        padding_mask = padding_mask == 0
        causal_mask = causal_mask.masked_fill(padding_mask, min_value)
        return causal_mask.expand(batch_size, self.num_heads, seq_len, seq_len).contiguous()


def get_inputs():
    # two sequences of 6 tokens, the first left-padded by 2
    return [torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]], dtype=torch.int64)]


def get_init_inputs():
    return [4, 3]
