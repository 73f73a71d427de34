"""A spectral filter: rfft of x [8, 1024] f32 along the last dim, times a real filter of 513
taps, irfft back; and the spectrum's magnitude summed."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.filt = nn.Parameter(torch.linspace(1.0, 0.0, 513))

    def forward(self, x):
        spectrum = torch.fft.rfft(x, dim=-1)
        y = torch.fft.irfft(spectrum * self.filt, n=1024, dim=-1)
        return y, spectrum.abs().sum()


def get_inputs():
    return [torch.randn(8, 1024)]


def get_init_inputs():
    return []
