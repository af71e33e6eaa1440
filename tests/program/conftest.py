"""Captured programs of the two reference models, built once per session."""

from __future__ import annotations

import pytest
from program_cases import Case, mlp_case, transformer_case


@pytest.fixture(scope="session")
def mlp() -> Case:
    return mlp_case()


@pytest.fixture(scope="session")
def transformer() -> Case:
    return transformer_case()


@pytest.fixture(scope="session", params=["mlp", "transformer"])
def case(request: pytest.FixtureRequest) -> Case:
    return request.getfixturevalue(request.param)
