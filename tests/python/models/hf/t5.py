"""T5 (transformers.T5Model, encoder and decoder) from its config class, random weights:
2 encoder and 2 decoder layers, d_model 32, 4 heads of 8, feed-forward 64 (ReLU), relative
position buckets 8, vocabulary 64; eval mode; the decoder's last hidden state. B=2, encoder
length 8, decoder length 6."""

import torch
from torch import nn
from transformers import T5Config, T5Model


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = T5Config(
            vocab_size=64,
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=16,
            decoder_start_token_id=0,
        )
        self.model = T5Model(config).eval()

    def forward(self, input_ids, decoder_input_ids):
        out = self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False)
        return out.last_hidden_state


def get_inputs():
    return [torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 6))]


def get_init_inputs():
    return []
