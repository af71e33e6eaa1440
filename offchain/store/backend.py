"""Where a store keeps its bytes: the `Backend` protocol and the local `FolderBackend`.

A backend maps (kind, 32-byte key) to bytes and knows nothing of formats or commitments;
`Store` checks every object it reads, so a backend only has to be atomic (a reader sees a
whole object or none), not trusted. Two others fit behind the same five methods:

- S3-compatible object stores: `put` is `put_object` with object key `<kind>/<hex>` (a PUT
  is atomic there: the object appears whole or not at all), `get` is `get_object` (a 404 /
  NoSuchKey becomes MissingObjectError), `has` is `head_object`, `delete` is a
  `head_object` then `delete_object`, `keys` is `list_objects_v2` with prefix `<kind>/`.
- IPFS: content is addressed by IPFS's own multihash (CID), not by our commitments, so the
  backend keeps an index kind/key -> CID beside the node (`put` adds the bytes, pins them
  and records the CID; `get` looks the CID up and cats it; `delete` unpins and drops the
  entry; `keys` lists the index). The index need not be trusted: the typed layer re-checks
  every object against its key anyway.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Protocol

from offchain.store.errors import MissingObjectError

KEY_SIZE: Final = 32
KIND_PATTERN: Final = re.compile(r"[a-z][a-z0-9-]*")
_HEX: Final = re.compile(r"[0-9a-f]{64}")


class Backend(Protocol):
    """Bytes by (kind, key). `location` names the backend in error messages."""

    location: str

    def put(self, kind: str, key: bytes, data: bytes) -> None:
        """Store `data` under (kind, key). Idempotent; atomic: no reader ever sees part of it."""
        ...

    def get(self, kind: str, key: bytes) -> bytes:
        """The bytes under (kind, key); MissingObjectError if there are none."""
        ...

    def has(self, kind: str, key: bytes) -> bool: ...

    def delete(self, kind: str, key: bytes) -> bool:
        """Remove (kind, key); True if something was removed."""
        ...

    def keys(self, kind: str) -> Iterator[bytes]:
        """The keys stored under `kind`, in no promised order."""
        ...


def check_kind(kind: str) -> str:
    if not isinstance(kind, str) or not KIND_PATTERN.fullmatch(kind):
        raise ValueError(f"object kind {kind!r} must match [a-z][a-z0-9-]*, e.g. 'tensor' or 'state'")
    return kind


def check_key(key: bytes) -> bytes:
    if not isinstance(key, bytes | bytearray | memoryview) or len(key) != KEY_SIZE:
        got = f"{len(key)} bytes" if isinstance(key, bytes | bytearray | memoryview) else type(key).__name__
        raise ValueError(f"object keys are {KEY_SIZE}-byte commitments or hashes, got {got}")
    return bytes(key)


class FolderBackend:
    """Objects as files `root/<kind>/<hex[:2]>/<hex>`, written by temp file + fsync + rename.

    A put writes `.<hex>.<random>.tmp` in the object's own folder, fsyncs it and renames it
    over the object's name (`os.replace`, atomic on POSIX and Windows), so a reader sees the
    old file, the new one, or none, never a part. Writing again replaces the file, which also
    repairs a damaged copy. A temp file left by a crash is never read: `keys` and `get` only
    see 64-hex-digit names. The folder rename itself is not fsynced, so after a power loss a
    fresh object may be missing (a clear error), but never partial.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            from offchain.store.errors import StoreError

            raise StoreError(f"the store {self.root} is a file, not a folder: give a folder (it is created if missing)")
        self.location = f"folder {self.root}"

    def __repr__(self) -> str:
        return f"FolderBackend({str(self.root)!r})"

    def path(self, kind: str, key: bytes) -> Path:
        """Where (kind, key) lives; ValueError for a malformed kind or key."""
        h = check_key(key).hex()
        return self.root / check_kind(kind) / h[:2] / h

    def put(self, kind: str, key: bytes, data: bytes) -> None:
        final = self.path(kind, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(8)}.tmp")
        try:
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise

    def get(self, kind: str, key: bytes) -> bytes:
        try:
            return self.path(kind, key).read_bytes()
        except FileNotFoundError:
            raise MissingObjectError(kind, key, self.location) from None

    def has(self, kind: str, key: bytes) -> bool:
        return self.path(kind, key).is_file()

    def delete(self, kind: str, key: bytes) -> bool:
        try:
            self.path(kind, key).unlink()
        except FileNotFoundError:
            return False
        return True

    def keys(self, kind: str) -> Iterator[bytes]:
        """Keys in hex order; temp files and anything else not named like an object are skipped."""
        top = self.root / check_kind(kind)
        if not top.is_dir():
            return
        for fan in sorted(os.scandir(top), key=lambda e: e.name):
            if len(fan.name) != 2 or not fan.is_dir():
                continue
            for entry in sorted(os.scandir(fan.path), key=lambda e: e.name):
                if _HEX.fullmatch(entry.name) and entry.name.startswith(fan.name) and entry.is_file():
                    yield bytes.fromhex(entry.name)
