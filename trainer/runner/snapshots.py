"""A content-addressed folder of state snapshots, keyed by state root (docs/commitments.md).

Every read recomputes the state root of what it loaded and refuses a mismatch, so a
corrupt, truncated or swapped file is an error, never a silently wrong state.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import torch

from trainer.commit import state_root

State = dict[str, torch.Tensor]


class SnapshotError(Exception):
    """A snapshot is missing, unreadable or does not match its root."""


class SnapshotStore:
    """`<folder>/<root hex>.pt` files written atomically (temp file + rename)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, root: bytes) -> Path:
        return self.folder / f"{root.hex()}.pt"

    def has(self, root: bytes) -> bool:
        return self.path(root).is_file()

    def put(self, state: Mapping[str, torch.Tensor], root: bytes | None = None) -> bytes:
        """Store `state`; returns its root. `root`, when given, must be the state's root."""
        actual = state_root(state)
        if root is not None and root != actual:
            raise SnapshotError(f"state root is {actual.hex()}, not the claimed {root.hex()}")
        path = self.path(actual)
        if path.is_file():
            return actual
        buf = io.BytesIO()
        torch.save({k: v.detach().cpu().contiguous() for k, v in state.items()}, buf)
        fd, tmp = tempfile.mkstemp(prefix=".snap-", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buf.getvalue())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return actual

    def get(self, root: bytes) -> State:
        path = self.path(root)
        if not path.is_file():
            raise SnapshotError(f"no snapshot with root {root.hex()} in {self.folder}")
        try:
            loaded = torch.load(path, weights_only=True)
        except Exception as e:  # torch raises many kinds on a corrupt file
            raise SnapshotError(f"snapshot {path} is unreadable: {e}") from e
        if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor) for v in loaded.values()):
            raise SnapshotError(f"snapshot {path} does not hold a map of tensors")
        actual = state_root(loaded)
        if actual != root:
            raise SnapshotError(f"snapshot {path} holds a state with root {actual.hex()}: the file is corrupt")
        return loaded
