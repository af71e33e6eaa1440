"""The CNN of train_eager.py as a refereed task: `refereed task post --workload digits_cnn_task:workload`."""

from __future__ import annotations

import torch.nn.functional as F
from train_eager import DigitsCNN, digits

from trainer.data.dataset import Dataset
from trainer.program import AdamWConfig
from trainer.workloads import Workload


def workload() -> Workload:
    x, y = digits("train")
    return Workload.of(
        "digits-cnn",
        DigitsCNN(),  # its parameters are drawn again by the keyed init rules: torch's seed does not matter
        F.cross_entropy,  # loss_fn(model(x), y)
        AdamWConfig(lr=1e-2, weight_decay=0.01, clip_grad_norm=1.0),  # torch.optim.AdamW + clip_grad_norm_
        Dataset.from_tensors("digits", x=x, y=y),  # example i is {"x": x[i], "y": y[i]}
        steps=16,
        checkpoint_interval=4,
        batch_size=32,
        seed=3,
    )
