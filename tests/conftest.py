"""Shared fixtures: a real anvil node (session-scoped), the compiled contracts, free ports."""

from __future__ import annotations

import ctypes
import json
import os
import socket
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

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
    parser.addoption(
        "--write-durations",
        metavar="PATH",
        default=None,
        help=f"write each test file's seconds (setup, call and teardown of its tests) to PATH as JSON, the form of "
        f"{DURATIONS.relative_to(Path(__file__).parents[1])} (which orders the run: see pytest_collection_modifyitems)",
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


# Seconds each test file took in a whole run with 2 workers (`--write-durations`; only the order matters);
# refresh it when a file's cost changes much. Read by the ordering below.
DURATIONS = Path(__file__).with_name("durations.json")


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (by higher-scoped fixture parameters)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest test files first, each file's tests in pytest's order.

    `./scripts/test` runs `-n auto --dist loadfile --no-loadscope-reorder`: a worker takes one whole file
    (so a file's module fixtures, an anvil or a trained model, are made once) and the next in this order when
    it is nearly done. The long files (whole scenarios on anvil, the walk-throughs run as separate processes)
    then start at once on both workers and the short ones fill in at the end; in collection order one
    worker's first chunk held every file of tests/agents while the other ran out of work. A file missing
    from DURATIONS counts as fast.
    """
    if not exhaustive(config):
        skip = pytest.mark.skip(reason=f"exhaustive: run with ./scripts/test --exhaustive (or {EXHAUSTIVE_ENV}=1)")
        for item in items:
            if "exhaustive" in item.keywords:
                item.add_marker(skip)
    seconds: dict[str, float] = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0.0))  # stable: keeps each file's order


_spent: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _spent[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--write-durations")
    if path and not hasattr(session.config, "workerinput"):  # the controller: it gets every worker's reports
        table = {f: round(s, 1) for f, s in sorted(_spent.items(), key=lambda kv: -kv[1]) if s >= 1.0}
        Path(path).write_text(json.dumps(table, indent=1) + "\n")


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
