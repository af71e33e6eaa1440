"""The sum takeover forge vectors (scripts/sum_takeover_vectors.py): the file is current, and each lie's sum data
is the slice's (its prefix sums end in the honest value's S, the liar's S gives the liar's value)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from offchain.game.dot import grid_exponent
from trainer.repops._fixed import p_sum, round_f32_dyadic

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sum_takeover_vectors", ROOT / "scripts" / "sum_takeover_vectors.py")
assert _spec is not None and _spec.loader is not None
vec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vec)

PATH = ROOT / "contracts" / "test" / "vectors" / vec.NAME


def test_sum_takeover_vectors_are_current() -> None:
    on_disk = json.loads(PATH.read_text())
    assert on_disk == vec.vectors(), f"{vec.NAME} is stale: rerun scripts/sum_takeover_vectors.py"


def test_sum_takeover_vectors_totals_give_the_values() -> None:
    import struct

    for c in json.loads(PATH.read_text())["cases"]:
        assert c["op"] == 112 + c["variant"]
        for lie in c["lies"]:
            e = grid_exponent(lie["key"]) - p_sum(lie["length"])
            pairs = ((int(lie["prefix"][-1]), lie["honestValue"]), (int(lie["liarTotal"]), lie["liarValue"]))
            for total, value in pairs:
                bits = struct.unpack("<I", struct.pack("<f", round_f32_dyadic(total, e) + 0.0))[0]
                assert bits == value
            assert lie["liarValue"] == lie["honestValue"] ^ 1 and len(lie["prefix"]) == lie["length"] + 1
