"""The differential vectors of the Solidity IEEE-754 libraries (docs/repops/ieee.md).

contracts/test/vectors/ieee_*.json are written by scripts/ieee_vectors.py and checked bit for bit
by the forge tests of Binary32, Binary64 and RepOpsElement. `test_vectors_are_up_to_date` fails
when the committed files differ from what the writer produces now (a kernel or a rule changed and
the contracts would be tested against stale bits); the other tests check that the vectors cover
what docs/repops/ieee.md promises.
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ieee_vectors", ROOT / "scripts" / "ieee_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


def _records(group: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    """The group's records as (a, b, c, out), as FloatVectors.sol decodes them."""
    width = group["width"]
    words = len(group["args"]) + 1
    data = bytes.fromhex(group["data"].removeprefix("0x"))
    assert len(data) == group["count"] * words * width
    fmt = ">" + ("I" if width == 4 else "Q") * words
    out = []
    for r in range(group["count"]):
        vals = struct.unpack_from(fmt, data, r * words * width)
        abc = [0, 0, 0]
        for col, v in zip(group["args"], vals[:-1], strict=True):
            abc[col] = v
        out.append((abc[0], abc[1], abc[2], vals[-1]))
    return out


def test_vectors_are_up_to_date(tmp_path: Path) -> None:
    """The committed files are exactly what the writer produces now (forge tests the same bytes)."""
    for fresh in _writer().write_all(tmp_path):
        committed = VECTORS / fresh.name
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed} is stale: run PYTHONPATH=. .venv/bin/python scripts/ieee_vectors.py"
        )


def test_every_element_op_code_has_vectors() -> None:
    """Every operator code RepOpsElement.sol defines has a group, and every group's code is one."""
    sol = (ROOT / "contracts" / "src" / "lib" / "RepOpsElement.sol").read_text()
    codes = {int(v) for v in re.findall(r"uint256 internal constant [A-Z0-9_]+ = (\d+);", sol)}
    count = int(re.search(r"OP_COUNT = (\d+);", sol).group(1))  # type: ignore[union-attr]
    codes.discard(count)
    assert codes == set(range(count))
    seen = {g["code"] for g in _load("ieee_element.json")["groups"]}
    assert seen == codes


@pytest.mark.parametrize(
    ("name", "nan", "sign"),
    [("ieee_binary32.json", 0x7FC00000, 1 << 31), ("ieee_binary64.json", 0x7FF8000000000000, 1 << 63)],
)
def test_arithmetic_edges_are_covered(name: str, nan: int, sign: int) -> None:
    """The arithmetic groups contain the edge operands the spec names and give only canonical NaNs."""
    frac = 23 if sign == 1 << 31 else 52
    inf = ((sign - 1) >> frac) << frac
    for group in _load(name)["groups"]:
        if group["name"] not in ("add", "sub", "mul", "div", "sqrt"):
            continue
        recs = _records(group)
        operands = {r[0] for r in recs}
        for want in (0, sign, 1, (1 << frac) - 1, inf - 1, inf, inf | sign, nan, nan | 1, inf | 1, nan | sign):
            assert want in operands, (name, group["name"], hex(want))
        outs = {r[3] for r in recs}
        assert nan in outs
        assert all(o == nan for o in outs if (o & (sign - 1)) > inf), "a NaN output that is not canonical"
        if group["name"] != "sqrt":  # a square root is never subnormal
            assert any(0 < (o & (sign - 1)) < 1 << frac for o in outs), "no subnormal result"
            assert inf in outs and inf | sign in outs, "no overflow to infinity"
