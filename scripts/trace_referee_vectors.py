"""Write the vectors of the TraceReferee forge tests (docs/game.md section 2.9).

Run `PYTHONPATH=. .venv/bin/python scripts/trace_referee_vectors.py [OUT_DIR]` (default
contracts/test/vectors); it writes trace_referee.json. contracts/test/TraceReferee.t.sol checks `evaluate`
against every trace, step by step, and plays games with them; tests/game/test_trace_referee_vectors.py
checks that the committed file is what this writes now and that every output is the RepOps kernel's, bit
for bit. Everything derives from fixed seeds; the traces come from trainer.repops.programs.run.

`functions[i]`: one function's inputs (`xs`, fp32 patterns: the edge values, its thresholds' neighbours,
seeded random patterns) and their traces, concatenated (`traces`: 8 bytes per step, big endian, `steps`
steps per input). `liars[i]`: a lying defender's trace for one input: its output is one ulp off the true one
(`value`, the true one `honestValue`), and it is consistent everywhere except at step `wrong`, whose value
was altered and every later step re-evaluated from it (`trace`); `honest` is the true trace. `ops`: single
steps, `count` records of 33 bytes (the opcode, then a, b, c and `apply`'s result, 8 bytes each, big endian):
every opcode on every pair of special operand patterns and on seeded random ones, so that TraceLib.step is
checked against `apply` on operands no honest trace reaches too.
"""

from __future__ import annotations

import json
import random
import struct
import sys
from pathlib import Path
from typing import Any

from trainer.repops.programs import FUNCTIONS, MASK64, PROGRAMS, Op, apply, run

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "contracts" / "test" / "vectors"
NAME = "trace_referee.json"


def _pattern(v: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", v))[0])


def _around(v: float, k: int = 1) -> list[int]:
    b = _pattern(v)
    return [(b + d) & 0xFFFFFFFF for d in range(-k, k + 1)]


COMMON = [
    0x00000000,
    0x80000000,
    0x00000001,
    0x80000001,
    0x007FFFFF,
    0x00800000,
    0x7F7FFFFF,
    0xFF7FFFFF,
    0x7F800000,
    0xFF800000,
    0x7FC00000,
    0xFFC00001,
    *_around(1.0, 0),
    *_around(-1.0, 0),
]
THRESHOLDS: dict[str, list[int]] = {
    "exp": [0x42B17217, 0x42B17218, 0xC2CFF1B4, 0xC2CFF1B5, *_around(-700.0, 0)],
    "log": [*_around(float.fromhex("0x1.6a09e6p-1")), _pattern(2.0)],
    "log1p": [*_around(-1.0), *_around(2.0**-24), *_around(2.0**-53, 0), _pattern(-(2.0**-30))],
    "rsqrt": [_pattern(4.0), _pattern(0.25)],
    "tanh": [*_around(10.0), *_around(-10.0)],
    "sigmoid": [*_around(-88.0, 0), *_around(104.0, 0)],
    "erf": [*_around(0.75), *_around(-0.75), *_around(10.625)],
    "gelu": [*_around(-15.0), *_around(0.75 * 2**0.5), *_around(-(0.75 * 2**0.5))],
    "gelu_tanh": [*_around(-15.0), *_around(3.0, 0)],
}
RANDOM = 8  # uniform patterns per function, and as many of magnitude below 16
LIAR_INPUTS = 2  # per function


def _inputs(name: str) -> list[int]:
    rng = random.Random(f"trace-referee-{name}")
    xs = [*COMMON, *THRESHOLDS[name]]
    xs += [rng.getrandbits(32) for _ in range(RANDOM)]
    xs += [(rng.getrandbits(1) << 31) | rng.randrange(0x3F800000 - (20 << 23), 0x41800000) for _ in range(RANDOM)]
    return list(dict.fromkeys(xs))


def _pack(trace: list[int]) -> str:
    return "0x" + b"".join(v.to_bytes(8, "big") for v in trace).hex()


def _liar(name: str, x: int, rng: random.Random) -> list[dict[str, Any]]:
    """Lying traces of `name` on x whose output is one ulp off: wrong at the last step, at the one before, and
    at an earlier arithmetic step (the first, from a seeded start, where a power-of-two offset of its value
    makes the re-evaluated output exactly the liar's value)."""
    prog = PROGRAMS[name]
    honest = run(name, x)
    value = honest[-1] ^ 1
    n = len(prog.steps)
    out: list[dict[str, Any]] = []

    def entry(wrong: int, trace: list[int]) -> dict[str, Any]:
        assert trace[-1] == value and trace[:wrong] == honest[:wrong] and trace[wrong] != honest[wrong]
        return {
            "name": name,
            "fn": prog.fn,
            "x": x,
            "value": value,
            "honestValue": honest[-1],
            "wrong": wrong,
            "trace": _pack(trace),
            "honest": _pack(honest),
        }

    out.append(entry(n - 1, [*honest[:-1], value]))
    # The binary64 value rounded last, replaced by the liar's fp32 value widened (exact).
    wide = struct.unpack("<Q", struct.pack("<d", struct.unpack("<f", struct.pack("<I", value))[0]))[0]
    out.append(entry(n - 2, run(name, x, {n - 2: wide})))
    arith = [i for i, s in enumerate(prog.steps[:-2]) if s.op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.SQRT)]
    start = rng.randrange(len(arith))
    for i in arith[start:] + arith[:start]:
        for e in range(63):
            for sign in (1, -1):
                alt = (honest[i] + sign * (1 << e)) & MASK64
                trace = run(name, x, {i: alt})
                if trace[-1] == value:
                    out.append(entry(i, trace))
                    return out
    return out


# Operand patterns for the single-step records: zeros, subnormals, the normal range's ends, +-1, infinities,
# NaNs (canonical, negative with a payload), an exp64 shift t = SHIFT + 5, SQRTH, a junk pattern.
SPECIALS = (
    0,
    1 << 63,
    1,
    0x000FFFFFFFFFFFFF,
    0x0010000000000000,
    0x3FF0000000000000,
    0xBFF0000000000000,
    0x7FEFFFFFFFFFFFFF,
    0x7FF0000000000000,
    0xFFF0000000000000,
    0x7FF8000000000000,
    0xFFF0000000000001,
    0x4338000000000005,
    0x3FE6A09E667F3BCD,
    0xA5A5A5A5A5A5A5A5,
)
RANDOM_OPS = 40  # random operand triples per opcode


def _ops() -> dict[str, Any]:
    rng = random.Random("trace-referee-ops")
    records = []
    for op in Op:
        triples = [
            (a, b, SPECIALS[(i + j) % len(SPECIALS)]) for i, a in enumerate(SPECIALS) for j, b in enumerate(SPECIALS)
        ]
        for _ in range(RANDOM_OPS):
            # Random binary64 values of moderate magnitude (the programs' range), and raw patterns.
            a = struct.unpack("<Q", struct.pack("<d", rng.uniform(-50, 50) * 2.0 ** rng.randint(-30, 30)))[0]
            triples.append((a, rng.getrandbits(64), rng.choice((0, 1, rng.getrandbits(64)))))
        for a, b, c in triples:
            records.append(bytes([int(op)]) + b"".join(v.to_bytes(8, "big") for v in (a, b, c, apply(op, a, b, c))))
    return {"count": len(records), "data": "0x" + b"".join(records).hex()}


def vectors() -> dict[str, Any]:
    functions = []
    liars: list[dict[str, Any]] = []
    for name, fn in FUNCTIONS.items():
        xs = _inputs(name)
        traces = [run(name, x) for x in xs]
        functions.append(
            {
                "name": name,
                "fn": fn,
                "steps": len(PROGRAMS[name].steps),
                "xs": xs,
                "traces": "0x" + "".join(_pack(t)[2:] for t in traces),
            }
        )
        rng = random.Random(f"trace-referee-liar-{name}")
        # Inputs whose output is finite and non-zero, so that one ulp off is a finite value too.
        finite = [x for x, t in zip(xs, traces, strict=True) if 0 < t[-1] & 0x7FFFFFFF < 0x7F7FFFFF]
        for x in rng.sample(finite, LIAR_INPUTS):
            liars += _liar(name, x, rng)
    return {"version": 1, "functions": functions, "liars": liars, "ops": _ops()}


def main(argv: list[str]) -> None:
    out_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    path = out_dir / NAME
    path.write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv)
