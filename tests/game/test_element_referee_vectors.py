"""The ElementReferee forge tests' vectors (scripts/element_referee_vectors.py) are up to date."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from trainer.commit import CHUNK, leaf_hash

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "contracts" / "test" / "vectors"


def _writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "element_referee_vectors", ROOT / "scripts" / "element_referee_vectors.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def written() -> dict[str, dict]:
    return _writer().vectors()


def test_vectors_are_up_to_date(written: dict[str, dict]) -> None:
    for name, data in written.items():
        assert json.loads((VECTORS / name).read_text()) == data, f"{name} is stale: run the script"


def test_each_lie_differs_in_one_element_of_its_chunk(written: dict[str, dict]) -> None:
    for data in written.values():
        for case in data.get("cases", ()):  # element_referee_args.json holds argument bytes only
            for lie in case["lies"]:
                honest = bytes.fromhex(lie["honestChunk"][2:])
                liar = bytes.fromhex(lie["liarChunk"][2:])
                assert len(honest) == len(liar) <= CHUNK
                diff = [i for i in range(len(honest)) if honest[i] != liar[i]]
                assert len(diff) == 1
                assert "0x" + leaf_hash(liar).hex() == lie["leaf"]
                assert case["output"]["leaves"][lie["chunkIndex"]] == "0x" + leaf_hash(honest).hex()
                assert lie["honestValue"] != lie["liarValue"]
