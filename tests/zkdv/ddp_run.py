"""Two CPU ranks (gloo) train a DistributedDataParallel model through zkdv, each on its own batches.

usage: ddp_run.py PATH STEPS
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, str(Path(__file__).parent))

from zkdv_cases import batch, mlp

import zkdv
import zkdv.torch

WORLD = 2


def worker(rank: int, path: str, steps: int) -> None:
    dist.init_process_group("gloo", init_method=f"file://{path}/.rendezvous", rank=rank, world_size=WORLD)
    config = zkdv.ZKDVConfig(name="ddp", sampling_policy=zkdv.SamplingPolicy.DEBUGCheckEvery(1))
    proof = zkdv.torch.ZKDV(Path(path) / "proof", config, replay_snapshot_interval=3)
    proof.start(rolling_window=16, probe_ratio=0.1)
    model = DistributedDataParallel(mlp())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model, opt = proof.prepare(model, opt)

    @proof.attest
    def attested_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any) -> None:
        x, y = batch
        proof.backward(F.cross_entropy(proof.forward(model, x), y))
        optimizer.step()
        optimizer.zero_grad()

    for t in range(steps):
        x, y = batch(100 * rank + t)  # every rank its own data
        with proof.transaction(batch=(x, y)):
            loss = F.cross_entropy(model(x), y)
            proof.backward(loss)
            opt.step()
            opt.zero_grad()
    proof.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], int(sys.argv[2])), nprocs=WORLD, join=True)
