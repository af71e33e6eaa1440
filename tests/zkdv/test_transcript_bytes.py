"""A fixed run's transcript is pinned byte for byte: a speed-up of zkdv's commitments may not change it.

The hashes were recorded from the code before the per-step overhead work (issue 14); every later change
to how zkdv computes its commitments (caching, native hashing, moving work off the step's critical path)
must leave `records.cborl` identical for the same run. A change of the transcript format changes them on
purpose, together with docs/zkdv.md. So does a change to the kernel manifest of the root record (it names
each kernel's spec section): the transformer's hash was re-pinned when index_put's section "Accumulating
index_put" became "Exact accumulation into indexed positions"; every state commitment stayed the same.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trainer.commit import _native
from trainer.runner.attested import AttestedRun
from trainer.workloads import char_transformer, mlp_digits

PINNED = {
    "mlp": "45089cfebf8af0ced45e6855c51c5cb8cd65e4acc6c8d9582ed35aa74255f24c",
    "transformer": "524847627f61cd1cf1a44d9d8b04b57293267294e49e691cf16dcb14817124e2",
}


@pytest.mark.parametrize("close", ["native", "python"])
@pytest.mark.parametrize(
    ("case", "make", "kwargs"),
    [
        ("mlp", mlp_digits, {"steps": 6, "checkpoint_interval": 3, "batch_size": 8}),
        ("transformer", char_transformer, {"steps": 3, "checkpoint_interval": 3, "batch_size": 2, "context": 8}),
    ],
)
def test_a_fixed_runs_transcript_bytes_are_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, make,  # type: ignore[no-untyped-def]
                                                  kwargs, close: str) -> None:
    """`close`: "python" takes a library without zkdv's step calls (rt_step_close, rt_gather, rt_same), so the
    close's update, commitments, rolling digest and probes, its copy and open's compare run their Python
    paths (with the library's other calls where it is built): the same bytes."""
    if close == "python":
        _native._load()  # loaded first: it records which calls it has
        monkeypatch.setattr(_native, "_closing", [False])
    w = make(**kwargs)
    run = AttestedRun(w.step, w.dataset, w.config, w.initial_state(), tmp_path, check_every=2)
    run.advance(w.config.steps)
    run.close()
    got = hashlib.sha256((tmp_path / "zkdv" / "records.cborl").read_bytes()).hexdigest()
    assert got == PINNED[case]
