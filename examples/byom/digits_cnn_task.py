"""A small CNN on the 8x8 digits as a refereed task: `refereed task post --workload digits_cnn_task:workload`.

Two 3x3 convolutions with padding 1, ReLU, 2x2 max pooling, tanh, two Linear layers; AdamW with weight
decay and gradient clipping; cross-entropy. Its dataset is a folder of example files (`Dataset.from_folder`).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from trainer.data.dataset import Dataset, digits
from trainer.program import AdamWConfig
from trainer.workloads import Workload


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
        return self.fc2(x)


def digits_folder(folder: Path) -> Dataset:
    """The training digits as a folder of files, one `torch.save`d {"x", "y"} dict per example."""
    if not folder.is_dir():
        digits("train").save_folder(folder)
    return Dataset.from_folder(folder, name="digits-folder")


def workload() -> Workload:
    return Workload.of(
        "digits-cnn",
        DigitsCNN(),
        F.cross_entropy,
        AdamWConfig(lr=3e-3, weight_decay=0.01, clip_grad_norm=1.0),
        digits_folder(Path("digits-data")),
        steps=32,
        checkpoint_interval=8,
        batch_size=32,
        seed=3,
    )
