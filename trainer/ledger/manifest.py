"""The kernel manifest pinned at a ledger's genesis.

A replay is only meaningful with kernels that give the bits the ledger was built with. The
manifest records, for the ledger's programs, which RepOps operator each node runs (with the
section of docs/repops.md that specifies it) and a behavioural fingerprint: the state root
and loss bits of each program run by the interpreter on fixed keyed probe inputs. Kernels
whose bits differ on the probes, or a kernel table missing an operator, give another
manifest; a refactor that keeps the bits (a faster engine, another thread count) does not.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence

import torch

from trainer.commit.records import state_root
from trainer.data.keyed import uniform_symmetric
from trainer.interp import Interpreter
from trainer.ledger.encoding import dumps
from trainer.ledger.errors import ManifestError
from trainer.program import Program
from trainer.repops import KERNELS, OpSpec

MANIFEST_VERSION = 1
PROBE_SEED = 0x4D414E49  # "MANI"


def _probe_inputs(program: Program) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    state: dict[str, torch.Tensor] = {}
    batch: dict[str, torch.Tensor] = {}
    for i in program.inputs:
        shape = tuple(i.type.shape)
        if i.type.dtype == torch.float32:
            t = uniform_symmetric(PROBE_SEED, i.name, shape, 1.0)
        else:
            t = torch.zeros(shape, dtype=i.type.dtype)
        if i.name == "count":  # the block program divides by its contribution count
            t = torch.ones(shape, dtype=i.type.dtype)
        (state if i.name in set(program.state_names) else batch)[i.name] = t
    return state, batch


def manifest_record(programs: Sequence[Program], kernels: Mapping[str, OpSpec] | None = None) -> dict[str, object]:
    table = KERNELS if kernels is None else kernels
    ops = sorted({n.op for p in programs for n in p.nodes})
    missing = [op for op in ops if op not in table]
    if missing:
        raise ManifestError(f"no RepOps kernel for {missing}: these kernels cannot run the ledger's programs")
    probes = []
    for p in programs:
        state, batch = _probe_inputs(p)
        new_state, loss = Interpreter(p, table).run(state, batch)
        probes.append(
            {
                "program": p.program_hash,
                "state_root": state_root(new_state),
                "loss_bits": struct.unpack("<I", struct.pack("<f", float(loss)))[0],
            }
        )
    return {
        "version": MANIFEST_VERSION,
        "ops": [[op, table[op].section] for op in ops],
        "probes": probes,
    }


def kernel_manifest(programs: Sequence[Program], kernels: Mapping[str, OpSpec] | None = None) -> bytes:
    """The canonical CBOR bytes of the manifest of `programs` under `kernels` (default: RepOps)."""
    return dumps(manifest_record(programs, kernels))


def manifest_hash(manifest: bytes) -> bytes:
    return hashlib.sha256(b"RMAN" + manifest).digest()
