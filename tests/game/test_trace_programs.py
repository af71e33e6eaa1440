"""contracts/src/lib/TracePrograms.sol is what scripts/trace_programs.py writes from trainer/repops/programs.py
now (docs/game.md 2.9): the Solidity programs cannot drift from the Python ones."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from trainer.repops.programs import PROGRAMS, Op

ROOT = Path(__file__).resolve().parents[2]


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trace_programs", ROOT / "scripts" / "trace_programs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_trace_programs_are_up_to_date_succeeds() -> None:
    committed = (ROOT / "contracts/src/lib/TracePrograms.sol").read_text()
    assert committed == _writer().source(), "TracePrograms.sol is stale: run scripts/trace_programs.py"


def test_solidity_programs_decode_to_the_python_ones_succeeds() -> None:
    """Read back from the Solidity text (not from the writer): every function's code, constants and step count."""
    src = (ROOT / "contracts/src/lib/TracePrograms.sol").read_text()
    for name, prog in PROGRAMS.items():
        n = name.upper()
        code = re.search(rf'bytes internal constant {n}_CODE =\s+hex"([0-9a-f]*)";', src)
        consts = re.search(rf'bytes internal constant {n}_CONSTANTS =\s+hex"([0-9a-f]*)";', src)
        steps = re.search(rf"uint256 internal constant {n}_STEPS = (\d+);", src)
        fn = re.search(rf"uint256 internal constant {n} = (\d+);", src)
        assert code and consts and steps and fn, name
        raw = bytes.fromhex(code.group(1))
        decoded = [(raw[i], tuple(raw[i + 1 : i + 4])) for i in range(0, len(raw), 4)]
        assert decoded == [(int(s.op), (*s.args, 0, 0, 0)[:3]) for s in prog.steps], name
        c = bytes.fromhex(consts.group(1))
        assert [int.from_bytes(c[i : i + 8], "big") for i in range(0, len(c), 8)] == list(prog.constants)
        assert int(steps.group(1)) == len(prog.steps) and int(fn.group(1)) == prog.fn
    for op in Op:
        assert f"uint256 internal constant OP_{op.name} = {int(op)};" in src
