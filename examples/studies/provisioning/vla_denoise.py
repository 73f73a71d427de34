"""The robot policy of vla_policy.py with a denoising action head, in the flow-matching style:
the backbone runs once, then an action expert (residual MLP blocks over the action chunk,
conditioned on the backbone's action-query features) refines a noisy chunk in STEPS Euler steps
(examples/studies/provisioning/README.md). bf16, batch 1: one control step."""

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vla_policy import CHUNK, DIM, DOF, DTYPE, Backbone  # noqa: E402
from vla_policy import get_inputs as policy_inputs  # noqa: E402

STEPS = 10  # denoising steps a control step
EXPERT_DIM, EXPERT_LAYERS = 1024, 3  # the action expert: 3 residual MLP blocks, 25 M weights


class ExpertBlock(nn.Module):
    """A residual 4x MLP over each action token, conditioned by adding the context."""

    def __init__(self) -> None:
        super().__init__()
        d = EXPERT_DIM
        self.norm = nn.LayerNorm(d, dtype=DTYPE)
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d, dtype=DTYPE), nn.GELU(), nn.Linear(4 * d, d, dtype=DTYPE)
        )

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x + context))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = Backbone()
        self.context = nn.Linear(DIM, EXPERT_DIM, dtype=DTYPE)
        self.action_in = nn.Linear(DOF, EXPERT_DIM, dtype=DTYPE)
        self.step_embedding = nn.Parameter(torch.randn(STEPS, EXPERT_DIM, dtype=DTYPE) * 0.02)
        self.blocks = nn.ModuleList([ExpertBlock() for _ in range(EXPERT_LAYERS)])
        self.action_out = nn.Linear(EXPERT_DIM, DOF, dtype=DTYPE)
        self.eval()  # run for inference

    def forward(self, images: torch.Tensor, state: torch.Tensor, noise: torch.Tensor):
        context = self.context(self.backbone(images, state)[:, -CHUNK:])  # the action queries
        actions = noise  # [b, CHUNK, DOF]
        for k in range(STEPS):  # Euler steps of the learned velocity field
            h = self.action_in(actions) + self.step_embedding[k]
            for block in self.blocks:
                h = block(h, context)
            actions = actions - self.action_out(h) / STEPS
        return actions


def get_inputs() -> list[torch.Tensor]:
    return [*policy_inputs(), torch.randn(1, CHUNK, DOF, dtype=DTYPE)]


def get_init_inputs() -> list:
    return []
