"""A robot policy in the vision-language-action style, written for SOLAR's provisioning study
(examples/studies/provisioning/README.md): two camera views through a ViT image encoder, a
transformer over the image tokens, a proprioception token and a chunk of action queries, and an
action head that emits the chunk (16 future actions of a 7-DoF arm). bf16, batch 1: one control
step."""

import torch
from torch import nn

VIEWS = 2  # camera views
IMAGE = 224  # pixels a side
PATCH = 16  # 224 / 16 = 14: 196 patches a view
ENC_DIM, ENC_LAYERS, ENC_HEADS = 768, 12, 12  # the image encoder (ViT-B sized: 85 M weights)
DIM, LAYERS, HEADS = 1024, 12, 16  # the policy transformer (151 M weights)
PROPRIO = 14  # joint positions and velocities of a 7-DoF arm
CHUNK, DOF = 16, 7  # actions emitted per step
DTYPE = torch.bfloat16  # every weight and activation (built in bf16: no fp32 copy, no cast)


class Block(nn.Module):
    """A pre-norm transformer block: self-attention and a 4x MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, dtype=DTYPE)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True, dtype=DTYPE)
        self.norm2 = nn.LayerNorm(dim, dtype=DTYPE)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim, dtype=DTYPE), nn.GELU(), nn.Linear(4 * dim, dim, dtype=DTYPE)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Backbone(nn.Module):
    """The image encoder and the policy transformer: the features of every token."""

    def __init__(self) -> None:
        super().__init__()
        tokens = (IMAGE // PATCH) ** 2
        self.patch = nn.Conv2d(3, ENC_DIM, PATCH, stride=PATCH, dtype=DTYPE)
        self.enc_pos = nn.Parameter(torch.randn(1, tokens, ENC_DIM, dtype=DTYPE) * 0.02)
        self.encoder = nn.Sequential(*[Block(ENC_DIM, ENC_HEADS) for _ in range(ENC_LAYERS)])
        self.to_policy = nn.Linear(ENC_DIM, DIM, dtype=DTYPE)
        self.proprio = nn.Linear(PROPRIO, DIM, dtype=DTYPE)
        self.queries = nn.Parameter(torch.randn(1, CHUNK, DIM, dtype=DTYPE) * 0.02)
        self.policy = nn.Sequential(*[Block(DIM, HEADS) for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(DIM, dtype=DTYPE)

    def forward(self, images: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        # images: [batch, views, 3, 224, 224]; the views share the encoder
        b = images.shape[0]
        x = self.patch(images.flatten(0, 1)).flatten(2).transpose(1, 2) + self.enc_pos
        x = self.to_policy(self.encoder(x)).reshape(b, -1, DIM)  # [b, 2 * 196, DIM]
        tokens = torch.cat([x, self.proprio(state)[:, None], self.queries.expand(b, -1, -1)], 1)
        return self.norm(self.policy(tokens))  # [b, 2 * 196 + 1 + CHUNK, DIM]


class Model(nn.Module):
    """The policy: the backbone, then a linear action head on the action query tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(DIM, DOF, dtype=DTYPE)
        self.eval()  # run for inference

    def forward(self, images: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(images, state)[:, -CHUNK:])  # [b, CHUNK, DOF]


def get_inputs() -> list[torch.Tensor]:
    images = torch.rand(1, VIEWS, 3, IMAGE, IMAGE, dtype=DTYPE)
    return [images, torch.randn(1, PROPRIO, dtype=DTYPE)]


def get_init_inputs() -> list:
    return []
