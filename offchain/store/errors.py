"""The root of every error `offchain.store` raises, and its two kinds of failed get."""

from __future__ import annotations

from offchain.errors import OffchainError


class StoreError(OffchainError):
    """Root of every error raised by `offchain.store`."""


class MissingObjectError(StoreError):
    """No object of this kind is stored under this key."""

    def __init__(self, kind: str, key: bytes, where: str) -> None:
        self.kind = kind
        self.key = bytes(key)
        self.where = where
        super().__init__(
            f"no {kind} object 0x{self.key.hex()} in {where}: it was never published there, or was deleted; "
            "fetch it from the agent that committed to it"
        )


class CorruptObjectError(StoreError):
    """The bytes stored under a key do not decode, or decode to something with another commitment."""

    def __init__(self, kind: str, key: bytes, detail: str) -> None:
        self.kind = kind
        self.key = bytes(key)
        self.detail = detail
        super().__init__(
            f"the {kind} object stored as 0x{self.key.hex()} is corrupt and was not used: {detail}; "
            "delete it and publish it again from a good copy"
        )
