"""Tiny models of issue 15 for the 8x8 digits (64 features per example, classes 0..9).

Each is an ordinary `torch.nn.Module` using stock layers (BatchNorm2d in training mode, nn.GRU,
nn.MultiheadAttention, LayerNorm), kept to a few thousand parameters so that tests can train them
through the RepOps interpreter in seconds. tests/workloads/test_models.py trains each one (with
`trainer.program.models.DigitsCNN`) bit-reproducibly and against eager torch. Shapes are in the names:
B batch, C channels, H/W height/width, T time (or tokens), D width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ResBlock2d(nn.Module):
    """conv3x3 -> BatchNorm2d -> ReLU -> conv3x3 -> BatchNorm2d, plus the input, then ReLU."""

    def __init__(self, c: int, bn_momentum: float = 0.1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c, momentum=bn_momentum)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c, momentum=bn_momentum)

    def forward(self, x_BCHW: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn1(self.conv1(x_BCHW)))
        return F.relu(x_BCHW + self.bn2(self.conv2(h)))


class DigitsResNet(nn.Module):
    """A ResNet-style CNN: x_B64 -> [B, 1, 8, 8] -> conv3x3 (C) + BatchNorm2d + ReLU -> 2x2 average pool
    -> two residual blocks at 4x4 -> global average pool -> Linear(C, 10) -> logits_BC."""

    def __init__(self, c: int = 8, bn_momentum: float = 0.1) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c, momentum=bn_momentum)
        self.block1 = ResBlock2d(c, bn_momentum)
        self.block2 = ResBlock2d(c, bn_momentum)
        self.head = nn.Linear(c, 10)

    def forward(self, x_B64: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.stem(x_B64.view(-1, 1, 8, 8))))
        x = self.block2(self.block1(F.avg_pool2d(x, 2)))  # [B, C, 4, 4]
        return self.head(x.mean(dim=(2, 3)))


class DigitsGRU(nn.Module):
    """The image's 8 rows as an 8-step sequence of 8 features: nn.GRU (batch first) -> last hidden
    state -> Linear(hidden, 10) -> logits_BC."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.rnn = nn.GRU(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 10)

    def forward(self, x_B64: torch.Tensor) -> torch.Tensor:
        out_BTD, _ = self.rnn(x_B64.view(-1, 8, 8))
        return self.head(out_BTD[:, -1])


class ViTBlock(nn.Module):
    """Pre-norm transformer block: x + MHA(LN(x)), then x + MLP(LN(x)) with GELU.

    The attention is asked for its weights: with need_weights=False torch takes its fused attention, whose
    backward has no RepOps kernel (tests/workloads/test_models.py pins the missing operators)."""

    def __init__(self, d: int, heads: int, mlp: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, mlp)
        self.fc_out = nn.Linear(mlp, d)

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x_BTD)
        x_BTD = x_BTD + self.attn(h, h, h, need_weights=True)[0]
        return x_BTD + self.fc_out(F.gelu(self.fc(self.ln2(x_BTD))))


class DigitsViT(nn.Module):
    """A tiny ViT: x_B64 -> [B, 1, 8, 8] -> 2x2 patches by a stride-2 conv (16 tokens of width D) + learned
    position embedding -> one transformer block -> LayerNorm -> mean over tokens -> Linear(D, 10)."""

    def __init__(self, d: int = 16, heads: int = 2, mlp: int = 32, patch: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(1, d, patch, stride=patch)
        n = (8 // patch) ** 2
        self.pos = nn.Parameter(torch.zeros(1, n, d))
        self.block = ViTBlock(d, heads, mlp)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x_B64: torch.Tensor) -> torch.Tensor:
        x_BDHW = self.patch(x_B64.view(-1, 1, 8, 8))
        x_BTD = x_BDHW.flatten(2).transpose(1, 2) + self.pos
        x_BTD = self.block(x_BTD)
        return self.head(self.ln(x_BTD).mean(dim=1))
