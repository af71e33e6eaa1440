"""A real anvil node for tests, demos and `refereed devnet`.

`Anvil(...)` starts the binary from node_modules (the platform package's native binary,
else the npm wrapper, else `anvil` on PATH) in its own process group, reads the
`Listening on 127.0.0.1:<port>` line from its stdout, then polls `eth_chainId` until the
node answers. As a context manager it stops the node on exit: SIGTERM, wait, then
SIGKILL, always reaped, so no zombie or orphan is left behind.

History is bounded: the node keeps the state of the last `history` blocks in memory
(`--prune-history`) and writes none to disk. Left alone, anvil keeps a few hundred states in
memory and writes every older one, a JSON file of the whole state per block, under
`~/.foundry/anvil/tmp/`, and does not remove them when it stops: 20 test runs left 62 GB
there (one up to 6 GB) and a CI machine ran out of disk. Like a full node (geth keeps 128 blocks), a call at
a block older than that is refused with `BlockOutOfRangeError`; nothing here reads older
state, and the readers that look back (the dashboard's feed) say so when they cannot.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Final, NoReturn, Self

from eth_account import Account

from offchain.chain.build import repo_root
from offchain.chain.errors import ChainError

DEFAULT_MNEMONIC: Final = "test test test test test test test test test test test junk"
DEFAULT_CHAIN_ID: Final = 31337
DERIVATION_PATH: Final = "m/44'/60'/0'/0/{}"
_LISTENING: Final = re.compile(r"Listening on (\S+):(\d+)")
DEFAULT_HISTORY: Final = 512  # blocks whose state a node keeps (in memory; none on disk)


class AnvilError(ChainError):
    """anvil could not be found, started, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class DevAccount:
    """A funded development account: never use these keys outside a local chain."""

    address: str
    private_key: str  # 0x-prefixed hex


def dev_accounts(count: int = 10, mnemonic: str = DEFAULT_MNEMONIC) -> tuple[DevAccount, ...]:
    """The accounts anvil funds for `mnemonic`, derived along m/44'/60'/0'/0/i."""
    return tuple(_dev_account(mnemonic, i) for i in range(count))


@functools.cache
def _dev_account(mnemonic: str, index: int) -> DevAccount:
    """One derivation (about 30 ms of pure-Python elliptic-curve arithmetic), done once per process: every
    agent of a multi-agent process (`oracle run --count 5`) and every anvil started by tests asks again."""
    Account.enable_unaudited_hdwallet_features()
    acct = Account.from_mnemonic(mnemonic, account_path=DERIVATION_PATH.format(index))
    return DevAccount(acct.address, "0x" + bytes(acct.key).hex())


def anvil_binary(root: Path | None = None) -> Path:
    """The anvil executable: native binary of the npm platform package, the npm wrapper, or PATH."""
    try:
        base = (root or repo_root()) / "node_modules"
    except ChainError:
        base = None
    if base is not None:
        for native in sorted(base.glob("@foundry-rs/anvil-*/bin/anvil")):
            if os.access(native, os.X_OK):
                return native
        wrapper = base / ".bin" / "anvil"
        if wrapper.exists():
            return wrapper
    found = shutil.which("anvil")
    if found:
        return Path(found)
    raise AnvilError("anvil not found: run `npm ci` in the repository root (it installs @foundry-rs/anvil)")


class Anvil:
    """One anvil process. Use as `with Anvil() as node: ...node.rpc_url...`."""

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        chain_id: int = DEFAULT_CHAIN_ID,
        accounts: int = 10,
        balance_eth: int = 10_000,
        mnemonic: str = DEFAULT_MNEMONIC,
        block_time: float | None = None,
        history: int = DEFAULT_HISTORY,
        extra_args: tuple[str, ...] = (),
        binary: Path | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.chain_id = chain_id
        self.mnemonic = mnemonic
        self.balance_eth = balance_eth
        self._n_accounts = accounts
        self._args = [
            "--host", host, "--port", str(port), "--chain-id", str(chain_id), "--accounts", str(accounts),
            "--balance", str(balance_eth), "--mnemonic", mnemonic,
        ]  # fmt: skip
        if block_time is not None:
            self._args += ["--block-time", f"{block_time:g}"]
        if history < 1:
            raise AnvilError(f"history must keep at least 1 block's state, got {history}")
        self.history = history
        self._args += ["--prune-history", str(history)]
        self._args += list(extra_args)
        self._binary = binary
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[str] | None = None
        self._command: list[str] = []
        self._stdout: collections.deque[str] = collections.deque(maxlen=200)
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._listening = threading.Event()
        self._threads: list[threading.Thread] = []
        self._port: int | None = None
        self._accounts: tuple[DevAccount, ...] | None = None

    # -- properties ------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise AnvilError("anvil is not running")
        return self._port

    @property
    def rpc_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def accounts(self) -> tuple[DevAccount, ...]:
        """The funded accounts, derived from the mnemonic."""
        if self._accounts is None:
            self._accounts = dev_accounts(self._n_accounts, self.mnemonic)
        return self._accounts

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> Self:
        if self._proc is not None:
            raise AnvilError("this Anvil was already started")
        binary = self._binary or anvil_binary()
        self._command = [str(binary), *self._args]
        try:
            self._proc = subprocess.Popen(
                self._command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,  # its own process group: Ctrl-C goes to us, we stop it
            )
        except OSError as e:
            raise AnvilError(f"could not start {binary}: {e}") from e
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._drain, args=(self._proc.stdout, self._stdout, True), daemon=True),
            threading.Thread(target=self._drain, args=(self._proc.stderr, self._stderr, False), daemon=True),
        ]
        for t in self._threads:
            t.start()
        try:
            self._wait_ready(time.monotonic() + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _drain(self, stream: IO[str], sink: collections.deque[str], watch: bool) -> None:
        for line in stream:
            sink.append(line)
            if watch and not self._listening.is_set():
                m = _LISTENING.search(line)
                if m:
                    self._port = int(m.group(2))
                    self._listening.set()
        stream.close()
        self._listening.set()  # end of output: wake the waiter, which then sees the exit

    def _wait_ready(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        output_ended = self._listening.wait(max(0.0, deadline - time.monotonic()))
        if self._port is None:
            if output_ended:  # stdout closed before the line: anvil is exiting
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=2.0)
            if proc.poll() is not None:
                self._fail(f"exited with status {proc.returncode} before listening", proc)
            self._fail(f"printed no `Listening on` line within {self.startup_timeout:g} s", proc)
        delay = 0.005
        while True:
            if proc.poll() is not None:
                self._fail(f"exited with status {proc.returncode}", proc)
            chain_id = _rpc_chain_id(self.rpc_url)
            if chain_id is not None:
                if chain_id != self.chain_id:
                    self._fail(f"answers with chain id {chain_id}, expected {self.chain_id}", proc)
                return
            if time.monotonic() >= deadline:
                self._fail(f"did not answer eth_chainId at {self.rpc_url} within {self.startup_timeout:g} s", proc)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _fail(self, what: str, proc: subprocess.Popen[str]) -> NoReturn:
        self.stop()
        for t in self._threads:
            t.join(timeout=1.0)
        err = self.stderr.strip() or "(nothing on stderr)"
        raise AnvilError(f"anvil (pid {proc.pid}) {what}; stderr:\n{err}\ncommand: {' '.join(self._command)}")

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until anvil exits (its status) or `timeout` passes (None)."""
        if self._proc is None:
            raise AnvilError("anvil was not started")
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM the process group, wait, SIGKILL if needed; always reaps. Returns the exit status."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                proc.wait()
        for t in self._threads:
            t.join(timeout=1.0)
        return proc.returncode

    @staticmethod
    def _signal_group(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
        try:
            os.killpg(proc.pid, sig)  # the group we created with start_new_session (pgid == pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            proc.send_signal(sig)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _rpc_chain_id(url: str, timeout: float = 1.0) -> int | None:
    """eth_chainId over plain HTTP, or None if nothing (valid) answers yet."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            result = json.loads(resp.read()).get("result")
        return int(result, 16) if isinstance(result, str) else None
    except (OSError, ValueError, urllib.error.URLError):
        return None
