"""Shared fixtures: a real anvil node (session-scoped), the compiled contracts, free ports."""

from __future__ import annotations

import ctypes
import os
import socket
from collections.abc import Iterator

import pytest
from hypothesis import settings

from offchain.chain.anvil import Anvil
from offchain.chain.build import Artifact, compile_contracts

EXHAUSTIVE_ENV = "REFEREED_EXHAUSTIVE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--exhaustive",
        action="store_true",
        default=False,
        help=f"also run the tests marked `exhaustive` (repeats and long sweeps; or set {EXHAUSTIVE_ENV}=1)",
    )


def exhaustive(config: pytest.Config) -> bool:
    """Whether this run includes the `exhaustive` tests (`--exhaustive` or REFEREED_EXHAUSTIVE=1)."""
    return bool(config.getoption("--exhaustive")) or os.environ.get(EXHAUSTIVE_ENV, "") not in ("", "0")


def pytest_configure(config: pytest.Config) -> None:
    # The ordinary run draws the same property-test examples every time, so a CI result is a fact about
    # the code, not about the draw; the exhaustive run draws fresh ones (a failure prints the example and
    # its reproduction blob: pin it with @example).
    settings.register_profile("repeatable", derandomize=True, print_blob=True)
    settings.register_profile("explore", derandomize=False, print_blob=True)
    settings.load_profile("explore" if exhaustive(config) else "repeatable")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if exhaustive(config):
        return
    skip = pytest.mark.skip(reason=f"exhaustive: run with ./scripts/test --exhaustive (or {EXHAUSTIVE_ENV}=1)")
    for item in items:
        if "exhaustive" in item.keywords:
            item.add_marker(skip)


def free_port() -> int:
    """A TCP port nothing listens on right now (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def anvil() -> Iterator[Anvil]:
    """One anvil for the session: `.rpc_url`, `.chain_id`, `.accounts` (funded dev keys)."""
    with Anvil() as node:
        yield node


@pytest.fixture(scope="session")
def artifacts() -> dict[str, Artifact]:
    """Every contract under contracts/src, compiled by py-solc-x (cached under out/pybuild)."""
    return compile_contracts()


@pytest.fixture
def unused_port() -> int:
    """A local TCP port where nothing listens."""
    return free_port()


@pytest.fixture
def closed_rpc_url(unused_port: int) -> str:
    """An RPC URL on a port where nothing listens."""
    return f"http://127.0.0.1:{unused_port}"


# -- the native SHA-256 library (trainer/commit), on each of its two paths -----------------------


@pytest.fixture(scope="module")
def sha256_lib() -> Iterator[ctypes.CDLL]:
    """The loaded native hashing library (skips where it cannot be built or loaded)."""
    from trainer.commit import _native

    built = _native.build()
    if built is None:
        pytest.skip("no C compiler: the native hashing library cannot be built")
    loaded = _native._load()
    if loaded is None:
        pytest.skip(f"the native hashing library at {built} does not load")
    yield loaded
    loaded.rt_set_portable(0)


@pytest.fixture(params=["shani", "portable"])
def sha256_impl(request: pytest.FixtureRequest, sha256_lib: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch
                ) -> Iterator[str]:
    """Each compression path of the library in turn: SHA-NI (where the CPU has it), then the portable C."""
    monkeypatch.delenv("REFEREED_NATIVE", raising=False)
    if request.param == "shani" and not sha256_lib.rt_has_shani():
        pytest.skip("this CPU has no SHA extensions")
    sha256_lib.rt_set_portable(request.param == "portable")
    yield request.param
    sha256_lib.rt_set_portable(0)
