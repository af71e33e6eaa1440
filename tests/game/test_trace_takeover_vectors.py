"""The trace takeover forge vectors (scripts/trace_takeover_vectors.py): the file is current, and its traces
are the programs' (honest) or one step off at the last (liar)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from trainer.repops import programs

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("trace_takeover_vectors", ROOT / "scripts" / "trace_takeover_vectors.py")
assert _spec is not None and _spec.loader is not None
vec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vec)

PATH = ROOT / "contracts" / "test" / "vectors" / vec.NAME


def test_trace_takeover_vectors_are_current() -> None:
    on_disk = json.loads(PATH.read_text())
    assert on_disk == vec.vectors(), f"{vec.NAME} is stale: rerun scripts/trace_takeover_vectors.py"


def test_trace_takeover_vectors_traces() -> None:
    """Every lie: the honest trace is the program's and ends in the honest value; the liar's ends in the liar
    value, one ulp off, and leaves the true trace at its last step only."""
    data = json.loads(PATH.read_text())
    names = {c["name"] for c in data["cases"][: data["functions"]]}
    assert names == set(programs.FUNCTIONS) - {"rsqrt"}
    for c in data["cases"]:
        for lie in c["lies"]:
            honest = programs.unpack(bytes.fromhex(lie["honestTrace"][2:]))
            liar = programs.unpack(bytes.fromhex(lie["liarTrace"][2:]))
            assert honest == programs.run(c["fn"], lie["x"])
            assert len(honest) == c["steps"] and honest[-1] == lie["honestValue"]
            assert liar[-1] == lie["liarValue"] != lie["honestValue"]
            assert programs.first_wrong_step(c["fn"], lie["x"], liar) == c["steps"] - 1
            assert liar[:-1] == honest[:-1]
