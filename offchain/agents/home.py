"""An agent's home is bound to what its records describe, and used by one process at a time.

A home (`--home`) holds an agent's records of one key on one deployment of one chain: the tasks
it took on, the roots it computed, the salts it committed with. Read against another chain (a
devnet restarted and redeployed at the very same addresses), another deployment or another key,
those records would be wrong ("task 1 is done" of the old chain), so the first agent that opens a
home writes down what it is bound to:

- the chain id and the hash of the chain's genesis block (a restarted anvil has a new one),
- the deployment's contract addresses,
- the key's address,

and every later open compares them and refuses (`HomeMismatch`, saying what differs and what to
do) rather than act on records of something else. `HomeLock` holds an exclusive `fcntl` lock on
`home/lock` while the agent runs: a second process on the same home is refused at once
(`HomeLocked`) instead of racing the first for nonces and records.
"""

from __future__ import annotations

import fcntl
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from offchain.errors import OffchainError

BINDING_KIND = "home"
BINDING_KEY = "binding"


class HomeError(OffchainError):
    """A home folder that cannot be used (not a folder, locked, or bound to something else)."""


class HomeLocked(HomeError):
    """Another process holds the home's lock."""


class HomeMismatch(HomeError):
    """The home's records describe another chain, deployment or key."""


@dataclass(frozen=True, slots=True)
class Binding:
    """What a home's records are about."""

    chain_id: int
    genesis: str  # 0x-hex hash of block 0
    contracts: dict[str, str]  # name -> checksum address
    address: str  # the key's address

    def to_json(self) -> dict[str, Any]:
        return {
            "chain_id": self.chain_id,
            "genesis": self.genesis,
            "contracts": self.contracts,
            "address": self.address,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Binding:
        return cls(int(data["chain_id"]), str(data["genesis"]), dict(data["contracts"]), str(data["address"]))

    def differences(self, other: Binding) -> list[str]:
        """What `other` (what the agent runs against now) has that differs from this binding, one phrase each."""
        out = []
        if self.address.lower() != other.address.lower():
            out.append(f"the key's address is {other.address}, the home's is {self.address}")
        if self.chain_id != other.chain_id:
            out.append(f"the chain id is {other.chain_id}, the home's is {self.chain_id}")
        elif self.genesis != other.genesis:
            out.append(
                f"the chain's genesis block is {other.genesis[:18]}.., the home's {self.genesis[:18]}.. "
                "(the chain was restarted or is another one)"
            )
        for name in sorted(set(self.contracts) | set(other.contracts)):
            mine, theirs = self.contracts.get(name, ""), other.contracts.get(name, "")
            if mine.lower() != theirs.lower():
                out.append(f"{name} is at {theirs or 'no address'}, the home's at {mine or 'no address'}")
        return out


def check_home_folder(home: Path, what: str = "--home") -> Path:
    """`home`, created if missing; `HomeError` naming the path when it is a file or cannot be created."""
    home = Path(home)
    if home.exists() and not home.is_dir():
        raise HomeError(f"{what} {home} is a file, not a folder: give a folder (it is created if missing)")
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HomeError(f"{what} {home} cannot be created ({e.strerror or e}): give a folder you can write") from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise HomeError(f"{what} {home} is not writable: give a folder you can write")
    return home


class HomeLock:
    """An exclusive, non-blocking `flock` on `home/lock` (released by `release` or when the process dies).

    The lock keeps other *processes* off a home. Inside one process, agents on the same home (a scenario's
    client that also challenges, an agent re-created after a phase) share it: the process holds one flock
    per home and counts its holders (`_HELD`, process state by nature, like the flock itself).
    """

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / "lock"
        self._key = str(self.path.resolve())
        self._held = False

    def acquire(self) -> HomeLock:
        with _HELD_GUARD:
            if self._key in _HELD:
                f, count = _HELD[self._key]
                _HELD[self._key] = (f, count + 1)
                self._held = True
                return self
            f = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the lock's lifetime
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "another process"
                f.close()
                raise HomeLocked(
                    f"home {self.path.parent} is in use by {holder}: stop that agent first, "
                    "or give this one another --home"
                ) from None
            f.seek(0)
            f.truncate()
            f.write(f"process {os.getpid()}")
            f.flush()
            _HELD[self._key] = (f, 1)
            self._held = True
            return self

    def release(self) -> None:
        with _HELD_GUARD:
            if not self._held or self._key not in _HELD:
                return
            self._held = False
            f, count = _HELD[self._key]
            if count > 1:
                _HELD[self._key] = (f, count - 1)
                return
            del _HELD[self._key]
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            finally:
                f.close()


_HELD: dict[str, tuple[IO[str], int]] = {}
_HELD_GUARD = threading.Lock()


def mismatch_message(home: Path, problems: list[str]) -> str:
    return (
        f"home {home} holds the records of another chain, deployment or key: {'; '.join(problems)}. "
        "Its records would be wrong here: give this agent another --home (or point it at the chain, deployment "
        "and key the home was made for)"
    )
