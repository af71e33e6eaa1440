"""Your own PyTorch training script, wrapped with zkdv, as the trainer of a posted task.

Run it from anywhere:  python examples/torch/task_trainer.py [--out DIR] [--home HOME --task-id ID]

A posted task names a program (by its hash), a dataset, an initial state and run parameters
(steps T, checkpoint interval c, batch size, seed). A trainer commits to the state roots at steps
0, c, 2c, ..., T of the run of that program, and must defend every interval of it in a dispute
game. Any script may produce those roots, as long as its steps compute exactly what the posted
program computes; zkdv makes an ordinary eager loop do that (its kernels are the RepOps kernels)
and shows that it did (the program its attested step captures is the posted one, byte for byte).

This script:

1. builds the task locally (the bundled MLP-on-digits task; a real trainer reads the task's
   materials from the public store: `offchain.agents.task.load_materials(spec, store)`);
2. trains it with its *own* model class and torch's own optimizer inside zkdv transactions,
   one per step, over the task's batches (`dataset.batch(seed, step, batch_size)`);
3. refuses to go on unless the program zkdv captured is the task's program (same hash);
4. keeps the post root of every checkpoint step (the roots to commit) and the checkpoint states,
   closes the proof (a poisoned run, `close()` raising ZKDVPoisonedError, must not be committed)
   and replays one interval with the RepOps interpreter to show the roots are the program's;
5. with `--home HOME --task-id ID`: writes the checkpoints into a trainer agent's home (its
   private store and its records), so that `refereed trainer run --home HOME --task ID` finds the
   run already trained, audits it by interpreter replay of sampled intervals, commits, reveals and
   defends it. docs/zkdv.md section 10 says the same in prose.
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
from trainer.commit import state_root
from trainer.interp import Interpreter
from trainer.workloads import mlp_digits


class MyNet(nn.Module):
    """The user's own module. Its parameter names and arithmetic must be the task's (here fc1, gelu, fc2)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(functional.gelu(self.fc1(x)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="where the proof goes (default: a temp folder)")
    parser.add_argument("--home", type=Path, default=None, help="a trainer agent's home to import the run into")
    parser.add_argument("--task-id", type=int, default=None, help="the posted task's id (with --home)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--interval", type=int, default=4)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="zkdv-task-")) / "proof"

    # 1. The task: program, dataset, initial state, run parameters (here built locally).
    task = mlp_digits(steps=args.steps, checkpoint_interval=args.interval, batch_size=8, seed=11)
    program, dataset, config, initial = task.program, task.dataset, task.config, task.initial_state()

    # 2. The user's model and optimizer, loaded with the task's initial state. The state names of a
    #    task are "param/<module name>" (and "buffer/...", "optim/..." for the optimizer's entries).
    model = MyNet()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(initial["param/" + name])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)

    # One replay snapshot per checkpoint interval: a sampled check replays at most c - 1 steps, and a
    # killed run resumes (proof.start(resume=True)) from its last checkpoint.
    proof = zkdv.torch.ZKDV(out, zkdv.ZKDVConfig(name="my-task-trainer",
                                                 sampling_policy=zkdv.SamplingPolicy(0.25, 0.25)),
                            replay_snapshot_interval=config.checkpoint_interval)
    proof.start(rolling_window=32, probe_ratio=0.01)
    model, optimizer = proof.prepare(model, optimizer)

    @proof.attest
    def attested_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any]) -> None:
        proof.backward(functional.cross_entropy(proof.forward(model, batch["x"]), batch["y"]))
        optimizer.step()

    # 3. The loop: one transaction per step over the task's keyed batch. The batch is the dict
    #    {"x", "y"} of the task's dataset, so the program's batch inputs are named as the task's.
    roots = {0: state_root(initial)}
    states: dict[int, dict[str, torch.Tensor]] = {0: initial}
    losses: dict[int, float] = {}
    for step in range(config.steps):
        batch = dataset.batch(config.seed, step, config.batch_size)
        with proof.transaction(batch=batch):
            loss = functional.cross_entropy(model(batch["x"]), batch["y"])
            proof.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        losses[step] = float(loss.detach())
        if step == 0 and proof.program is not None and proof.program.program_hash != program.program_hash:
            raise SystemExit(
                f"this script's step captures program {proof.program.program_hash.hex()[:16]}.., the task's is "
                f"{program.program_hash.hex()[:16]}..: it does not train the posted task (another model, loss, "
                "optimizer or batch layout); nothing to commit"
            )
        if (step + 1) % config.checkpoint_interval == 0:
            roots[step + 1] = proof.last_post_root  # the transcript's committed post root of this step
            states[step + 1] = {"param/" + n: p.detach().clone() for n, p in model.named_parameters()}
            states[step + 1].update(
                {f"optim/momentum_buffer/{n}": optimizer.state[p]["momentum_buffer"].clone()
                 for n, p in model.named_parameters()}
            )

    # 4. Close: waits for the sampled checks; raises zkdv.ZKDVPoisonedError if one failed (then the
    #    run must not be committed: the bond would be lost in the game).
    proof.close()
    for k, state in states.items():
        assert state_root(state) == roots[k], f"checkpoint {k}: the kept state is not the committed one"
    # The referee's view: replay the last interval with the RepOps interpreter from its checkpoint.
    first = config.steps - config.checkpoint_interval
    interp, state = Interpreter(program), states[first]
    for step in range(first, config.steps):
        state, _ = interp.run(state, dataset.batch(config.seed, step, config.batch_size))
    assert state_root(state) == roots[config.steps], "the interpreter disagrees with the transcript"
    print(f"trained {config.steps} steps through zkdv (transcript {out / 'records.cborl'}); checkpoint roots:")
    for k, r in sorted(roots.items()):
        print(f"  step {k:4d}: 0x{r.hex()}")

    # 5. Import into a trainer agent's home: its private store holds the checkpoint states (the game
    #    replays intervals from them), its records the roots and losses. The agent then treats the
    #    run as its own, trained before a restart.
    if args.home is not None:
        if args.task_id is None:
            raise SystemExit("--home needs --task-id (the posted task's id)")
        from offchain.agents.db import AgentDB
        from offchain.store import Store

        args.home.mkdir(parents=True, exist_ok=True)
        store, db = Store(args.home / "store"), AgentDB(args.home / "agent.db")
        for k, state in sorted(states.items()):
            if store.put_state(state) != roots[k]:
                raise SystemExit(f"checkpoint {k}: the store computed another root")
            db.put_checkpoint(args.task_id, k, roots[k])
        db.put_losses(args.task_id, losses)
        print(f"imported into {args.home}: run `refereed trainer run --home {args.home} --task {args.task_id}`")


if __name__ == "__main__":
    main()
