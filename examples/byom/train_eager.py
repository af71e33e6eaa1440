"""An ordinary PyTorch script: a small MLP learns which ring of the plane a point lies in.

This is where a user starts (docs/bring-your-own-model.md): a model, a dataset as tensors, a loss and
an optimizer, trained eagerly by torch. `rings_task.py` turns the same pieces into a refereed task.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RingsMLP(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 3)

    def forward(self, x_B2: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x_B2))
        h = torch.tanh(self.fc2(h))
        return self.out(h)  # logits [B, 3]


def rings() -> tuple[torch.Tensor, torch.Tensor]:
    """Points of a 32 x 32 grid over [-1, 1)^2 (exact in fp32) and their ring: 0 inside r = 0.45, 1 inside 0.8, 2."""
    coords = torch.arange(-16, 16, dtype=torch.float32) / 16
    x = torch.cartesian_prod(coords, coords)  # [1024, 2]
    r2 = (x * x).sum(1)
    y = (r2 >= 0.45**2).long() + (r2 >= 0.8**2).long()
    return x, y


def main(steps: int = 300) -> float:
    torch.manual_seed(0)
    x, y = rings()
    model = RingsMLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (32,))
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = float((model(x).argmax(1) == y).float().mean())
    print(f"eager torch: loss {loss.item():.3f}, accuracy {acc:.3f} after {steps} steps")
    return acc


if __name__ == "__main__":
    main()
