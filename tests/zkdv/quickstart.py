# The seed's Torch quick start, as written, except that it runs on the CPU: the two
# `.cuda()` / `device="cuda"` placements are dropped (zkdv's RepOps kernels run on the CPU).
import torch
from torch import nn
from torch.nn import functional

import zkdv

proof = zkdv.torch.ZKDV("proof")
proof.start(rolling_window=32, probe_ratio=0.01)
model = nn.Linear(10, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = proof.prepare(model, optimizer)


@proof.attest
def attested_step(model, optimizer, batch):
    inputs, targets = batch
    loss = functional.cross_entropy(proof.forward(model, inputs), targets)
    proof.backward(loss)
    optimizer.step()
    optimizer.zero_grad()


data = [
    (
        torch.randn(8, 10, device="cpu"),
        torch.randint(2, (8,), device="cpu"),
    )
]
for inputs, targets in data:
    with proof.transaction(batch=(inputs, targets)):
        loss = functional.cross_entropy(model(inputs), targets)
        proof.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

proof.close()
