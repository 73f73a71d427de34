"""An fft of a complex input z [4, 64] c64, a product with another complex input, its real pairs
(view_as_real), doubled on its pairs and viewed back (view_as_complex), and an ifft."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, z, w):
        f = torch.fft.fft(z, dim=-1)
        g = f * w
        doubled = torch.view_as_complex(torch.view_as_real(g) * 2.0)
        return torch.view_as_real(g), torch.fft.ifft(doubled, dim=-1)


def get_inputs():
    return [torch.randn(4, 64, dtype=torch.complex64), torch.randn(4, 64, dtype=torch.complex64)]


def get_init_inputs():
    return []
