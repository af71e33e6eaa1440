"""Small reference models: an MLP and a character transformer (the bundled workloads), a digits CNN.

Ordinary `torch.nn.Module`s, single device, written so that their captured training step
uses only operators that RepOps implements (no fused attention, no in-place updates, no
slicing). Tensor shapes are in the names: B batch, T time, D model width, H heads,
K head width, V vocabulary, C classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True, slots=True)
class MLPConfig:
    d_in: int = 64
    d_hidden: int = 128
    n_classes: int = 10


class MLP(nn.Module):
    """Linear -> GELU -> Linear: x_BI -> logits_BC."""

    def __init__(self, config: MLPConfig = MLPConfig()) -> None:
        super().__init__()
        self.config = config
        self.fc1 = nn.Linear(config.d_in, config.d_hidden)
        self.fc2 = nn.Linear(config.d_hidden, config.n_classes)

    def forward(self, x_BI: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x_BI)))


@dataclass(frozen=True, slots=True)
class TransformerConfig:
    vocab_size: int = 256
    context: int = 32  # T: the block length the model is trained on
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        mask_TT = torch.tril(torch.ones(config.context, config.context, dtype=torch.bool))
        # Not trained and not part of the state: captured as a program constant.
        self.register_buffer("mask", mask_TT, persistent=False)
        self.mask: torch.Tensor

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        B, T, D = x_BTD.shape
        H, K = self.n_heads, D // self.n_heads
        q_BTD, k_BTD, v_BTD = self.qkv(x_BTD).split(D, dim=-1)
        q_BHTK = q_BTD.view(B, T, H, K).transpose(1, 2)
        k_BHTK = k_BTD.view(B, T, H, K).transpose(1, 2)
        v_BHTK = v_BTD.view(B, T, H, K).transpose(1, 2)
        att_BHTT = (q_BHTK @ k_BHTK.transpose(-2, -1)) * (1.0 / math.sqrt(K))
        att_BHTT = att_BHTT.masked_fill(~self.mask, float("-inf")).softmax(dim=-1)
        y_BTD = (att_BHTT @ v_BHTK).transpose(1, 2).reshape(B, T, D)
        return self.proj(y_BTD)


class Block(nn.Module):
    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.fc = nn.Linear(config.d_model, config.mlp_ratio * config.d_model)
        self.fc_out = nn.Linear(config.mlp_ratio * config.d_model, config.d_model)

    def forward(self, x_BTD: torch.Tensor) -> torch.Tensor:
        x_BTD = x_BTD + self.attn(self.ln1(x_BTD))
        return x_BTD + self.fc_out(F.gelu(self.fc(self.ln2(x_BTD))))


class CharTransformer(nn.Module):
    """A GPT-style character model: tokens_BT -> logits_BTV, trained on blocks of `context`."""

    def __init__(self, config: TransformerConfig = TransformerConfig()) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self.register_buffer("positions", torch.arange(config.context), persistent=False)
        self.positions: torch.Tensor

    def forward(self, tokens_BT: torch.Tensor) -> torch.Tensor:
        if tokens_BT.shape[1] != self.config.context:
            raise ValueError(
                f"blocks of {tokens_BT.shape[1]} tokens; this model is built for blocks of {self.config.context}"
            )
        x_BTD = self.tok_emb(tokens_BT) + self.pos_emb(self.positions)
        for block in self.blocks:
            x_BTD = block(x_BTD)
        return self.head(self.ln_f(x_BTD))


def sequence_cross_entropy(logits_BTV: torch.Tensor, targets_BT: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position of every sequence."""
    return F.cross_entropy(logits_BTV.reshape(-1, logits_BTV.shape[-1]), targets_BT.reshape(-1))


class DigitsCNN(nn.Module):
    """The CNN of issue 15 for 8x8 digits: x_B64 -> view [B, 1, 8, 8] -> 3x3 conv (8 channels,
    padding 1) -> ReLU -> 2x2 max pool -> 3x3 conv (16) -> ReLU -> 2x2 max pool -> Linear(64, 32)
    -> tanh -> Linear(32, 10) -> logits_BC."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x_B64: torch.Tensor) -> torch.Tensor:
        x = x_B64.view(-1, 1, 8, 8)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(torch.tanh(self.fc1(x.flatten(1))))
