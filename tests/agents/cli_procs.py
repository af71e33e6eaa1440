"""Every agent as its own `refereed` process, as a user runs them: helpers shared by the multi-process tests."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    env.pop("REFEREED_KEY", None)
    return env


@dataclass
class Proc:
    """A `refereed` subprocess whose stdout and stderr go to files (a pipe nobody reads would block it)."""

    name: str
    args: list[str]
    folder: Path
    popen: subprocess.Popen[bytes] | None = None
    out_path: Path = field(init=False)
    err_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.out_path = self.folder / f"{self.name}.out"
        self.err_path = self.folder / f"{self.name}.err"

    def start(self, cwd: Path, env: dict[str, str] | None = None) -> Proc:
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "offchain.cli", *self.args], stdout=out, stderr=err, cwd=cwd,
                env=env or cli_env(),
            )  # fmt: skip
        return self

    @property
    def out(self) -> str:
        return self.out_path.read_text(encoding="utf-8", errors="replace")

    @property
    def err(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout: float = 60.0) -> int:
        """SIGINT (Ctrl-C), twice if needed; the exit status (killed: -9)."""
        assert self.popen is not None
        if self.popen.poll() is None and " stopped" in self.out:  # finished on its own: let it exit
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(30)
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.send_signal(signal.SIGINT)
                try:
                    self.popen.wait(10)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait()
        return int(self.popen.returncode)

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()

    def describe(self) -> str:
        tail_out = "\n".join(self.out.splitlines()[-25:])
        tail_err = "\n".join(self.err.splitlines()[-25:])
        return f"--- {self.name} (rc {self.popen.poll() if self.popen else None})\n{tail_out}\n{tail_err}"


def run_cli(args: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offchain.cli", *args], capture_output=True, text=True, cwd=cwd, env=cli_env(),
        timeout=timeout,
    )  # fmt: skip


def start_devnet(folder: Path, port: int, deployments: Path, *, idle: float = 4.0, timeout: float = 60) -> Proc:
    """`refereed devnet --fast-forward` on `port`; returns once its RPC URL is printed."""
    args = ["devnet", "--port", str(port), "--fast-forward", "--idle", str(idle), "--deployments", str(deployments)]
    proc = Proc("devnet", args, folder).start(folder)
    deadline = time.monotonic() + timeout
    while "RPC URL" not in proc.out:
        assert proc.alive(), proc.describe()
        assert time.monotonic() < deadline, proc.describe()
        time.sleep(0.2)
    return proc


def wait_until(what: str, done: Callable[[], bool], procs: list[Proc], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        dead = [p for p in procs if p.popen is not None and p.popen.poll() not in (None, 0)]
        assert not dead, f"a process failed before {what}:\n" + "\n".join(p.describe() for p in dead)
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n" + "\n".join(p.describe() for p in procs)
        time.sleep(0.5)


_TRACE = re.compile(r"Traceback \(most recent call last\)")


def has_traceback(text: str) -> bool:
    return bool(_TRACE.search(text))


def stop_all(procs: list[Proc]) -> dict[str, int]:
    """Stop every started process, the last started first, as `Proc.stop` (Ctrl-C); their exit statuses by
    name. Interrupted while stopping (a second Ctrl-C, a timeout of the test run): every process still
    running is killed before the interruption goes on, so no agent outlives the test."""
    started = [p for p in reversed(procs) if p.popen is not None]
    try:
        return {p.name: p.stop() for p in started}
    except BaseException:
        for p in started:
            p.kill()
        raise
