"""The MLP of train_eager.py as a refereed task: `refereed task post --workload rings_task:workload`."""

from __future__ import annotations

import torch.nn.functional as F
from train_eager import RingsMLP, rings

from trainer.data.dataset import Dataset
from trainer.program import SGDConfig
from trainer.workloads import Workload


def workload() -> Workload:
    x, y = rings()
    return Workload.of(
        "rings-mlp",
        RingsMLP(),  # its parameters are drawn again by the keyed init rules: torch's seed does not matter
        F.cross_entropy,  # loss_fn(model(x), y)
        SGDConfig(lr=0.2, momentum=0.9),
        Dataset.from_tensors("rings", x=x, y=y),  # example i is {"x": x[i], "y": y[i]}
        steps=16,
        checkpoint_interval=4,
        batch_size=32,
        seed=7,
    )
