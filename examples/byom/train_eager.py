"""An ordinary PyTorch script: a small CNN learns the 8x8 handwritten digits.

This is where a user starts (docs/bring-your-own-model.md): a model, a dataset as tensors, a loss and
an optimizer, trained eagerly by torch. `digits_cnn_task.py` turns the same pieces into a refereed task.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x_B64: torch.Tensor) -> torch.Tensor:
        x = x_B64.view(-1, 1, 8, 8)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # [B, 8, 4, 4]
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # [B, 16, 2, 2]
        x = torch.tanh(self.fc1(x.flatten(1)))
        return self.fc2(x)  # logits [B, 10]


def digits(split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 8x8 digits: x float32 [N, 64] in [0, 1], y int64 [N]; the first 80% train, the rest test."""
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0  # exact: the pixels are 0..16
    y = torch.tensor(data.target, dtype=torch.int64)
    cut = round(len(x) * 0.8)
    return (x[:cut], y[:cut]) if split == "train" else (x[cut:], y[cut:])


def accuracy(model: nn.Module, split: str = "test") -> float:
    x, y = digits(split)
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main(steps: int = 200) -> float:
    torch.manual_seed(0)
    x, y = digits("train")
    model = DigitsCNN()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (32,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    acc = accuracy(model)
    print(f"eager torch: loss {loss.item():.3f}, test accuracy {acc:.3f} after {steps} steps")
    return acc


if __name__ == "__main__":
    main()
