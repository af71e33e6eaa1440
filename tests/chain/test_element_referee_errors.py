"""ElementReferee's custom errors and their typed classes (offchain/contracts/element_referee.py)."""

from __future__ import annotations

from offchain.chain.build import Artifact
from offchain.contracts._base import LIBRARY_ERRORS
from offchain.contracts.element_referee import (
    CONTRACT_NAME,
    ELEMENT_ARITHMETIC_ERRORS,
    ELEMENT_REFEREE_ERRORS,
    ERRORS,
)


def test_every_error_of_the_referee_has_its_class(artifacts: dict[str, Artifact]) -> None:
    """The referee's ABI errors are exactly its own table, the evaluator's table and library errors; each
    class has a sentence."""
    declared = {item["name"] for item in artifacts[CONTRACT_NAME].abi if item["type"] == "error"}
    own = {name for name in declared if name.startswith("ElementReferee")}
    assert own == set(ELEMENT_REFEREE_ERRORS)
    assert declared - own <= set(ELEMENT_ARITHMETIC_ERRORS) | set(LIBRARY_ERRORS)
    # The evaluator's errors reach a `proveElement` caller from TraceReferee.evaluateElement, which computes the
    # element (docs/game.md 2.7); the ElementReferee client decodes them.
    computed_by = {item["name"] for item in artifacts["TraceReferee"].abi if item["type"] == "error"}
    assert set(ELEMENT_ARITHMETIC_ERRORS) <= declared | computed_by
    for table in ERRORS[:2]:
        assert all(cls.__dict__.get("__doc__") for cls in table.values())
