"""ViT (transformers.ViTModel) from its config class, random weights: 16x16 images of 3
channels in 4x4 patches (16 patches and a class token), 2 layers, hidden 32, 4 heads,
intermediate 64; eval mode; the last hidden state and the pooled output. B=2."""

import torch
from torch import nn
from transformers import ViTConfig, ViTModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        config = ViTConfig(
            image_size=16,
            patch_size=4,
            num_channels=3,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
        )
        self.model = ViTModel(config).eval()

    def forward(self, pixel_values):
        out = self.model(pixel_values=pixel_values)
        return out.last_hidden_state, out.pooler_output


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return []
