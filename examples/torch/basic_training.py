"""A fully commented zkdv run: an ordinary PyTorch loop whose every update is committed to a
transcript and whose sampled steps are re-checked by replay.

Run it from anywhere:  python examples/torch/basic_training.py [--out DIR] [--steps N]
It trains a small classifier on the bundled digits data, writes DIR/records.cborl (the
transcript), DIR/program.onnx (the sealed program) and DIR/snapshots/ (replay snapshots),
and prints what the transcript holds. docs/zkdv.md explains every record.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

import zkdv
import zkdv.torch
from trainer.data.dataset import digits
from zkdv.transcript import read_records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="where the proof goes (default: a temp folder)")
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="zkdv-example-")) / "proof"

    # 1. Configure the run. The sampling policy decides which steps are re-checked by replaying
    #    the captured program with the RepOps interpreter: here each step's state and update are
    #    checked with probability 0.25 each (drawn from a keyed hash, so a resumed run draws the
    #    same steps). SamplingPolicy.DEBUGCheckEvery(n) checks every n-th step instead.
    config = zkdv.ZKDVConfig(
        name="digits-example",
        sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.25, update_check_probability=0.25),
    )
    # max_in_flight bounds the transactions whose check has not retired yet;
    # replay_snapshot_interval=8 copies the full state every 8 steps, so a check replays at most
    # 7 earlier steps before the one it checks.
    proof = zkdv.torch.ZKDV(out, config, max_in_flight=2, replay_snapshot_interval=8)
    # rolling_window: bytes per rolling-hash window over each committed batch row (a row here is
    # 64 float32 pixels + one int64 label = 264 bytes); probe_ratio: the fraction of each
    # parameter's last dimension kept as a per-step probe of the parameter.
    proof.start(rolling_window=32, probe_ratio=0.05)

    # 2. An ordinary model and optimizer. Nothing here knows about zkdv.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    # prepare() returns the same objects; the optimizer now lowers to its functional form inside
    # a transaction and behaves natively outside one.
    model, optimizer = proof.prepare(model, optimizer)

    # 3. The attested step: the hermetic function zkdv captures into its program at the first
    #    transaction. proof.forward marks the module call, proof.backward the gradient boundary.
    #    It must not draw random numbers itself (pass any noise in the batch).
    @proof.attest
    def attested_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any) -> None:
        inputs, targets = batch
        loss = functional.cross_entropy(proof.forward(model, inputs), targets)
        proof.backward(loss)
        optimizer.step()
        optimizer.zero_grad()

    # 4. The training loop, unchanged but for the transaction around each step. Inside it every
    #    ATen call runs on a RepOps kernel, so the committed post-state is exactly what the
    #    interpreter computes from the committed pre-state and batch. The body may instead call
    #    the attested step itself, attested_step(model, optimizer, (inputs, targets)), on the
    #    transaction's own batch tensors: after capture that call runs the sealed program with
    #    the interpreter, with the same bits and a cheaper step (docs/zkdv.md section 2, "Program
    #    step"); it needs a step that returns nothing or its loss and ends with zero_grad().
    data = digits("train")
    examples = data.examples
    batch_size = 32
    losses = []
    for step in range(args.steps):
        chunk = [examples[(step * batch_size + i) % len(examples)] for i in range(batch_size)]
        inputs = torch.stack([ex["x"] for ex in chunk])
        targets = torch.stack([ex["y"] for ex in chunk])
        with proof.transaction(batch=(inputs, targets)):
            loss = functional.cross_entropy(model(inputs), targets)
            proof.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        losses.append(float(loss.detach()))

    # 5. close() waits for every queued check, flushes the transcript and raises
    #    zkdv.ZKDVPoisonedError (naming the step and what differed) if any check failed.
    proof.close()

    records = [r for r, _ in read_records(out / "records.cborl")]
    steps = [r for r in records if r["type"] == "step"]
    checks = [r for r in records if r["type"] == "check"]
    root = records[0]
    print(f"transcript {out / 'records.cborl'}: {len(records)} records, {(out / 'records.cborl').stat().st_size} bytes")
    print(f"prover {root['prover']}, program {root['program']['program_hash'].hex()[:16]}.. "
          f"({root['program']['nodes']} nodes, artifact sha256 {root['program']['artifact_sha256'].hex()[:16]}..)")
    print(f"{len(steps)} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"{len(checks)} sampled checks, all passed: {all(c['ok'] for c in checks)}")
    print(f"final state root {records[-1]['final'].hex()}")


if __name__ == "__main__":
    main()
