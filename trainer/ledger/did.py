"""Contributor identities: `did:pkh:eip155:<chainId>:<address>` (CAIP-10 account ids).

The address is written in lowercase hex, so that the DID's UTF-8 bytes, which order the
contributors of a block, do not depend on how a client chose to checksum it.
"""

from __future__ import annotations

import itertools
import re

from trainer.ledger.errors import LedgerError

_PREFIX = "did:pkh:eip155:"
_DID = re.compile(r"^did:pkh:eip155:([1-9][0-9]{0,19}):(0x[0-9a-f]{40})$")


def did_of(chain_id: int, address: str) -> str:
    """The DID of `address` on chain `chain_id`."""
    if type(chain_id) is not int or not 1 <= chain_id < 2**64:
        raise LedgerError(f"chain id must be an integer in [1, 2^64), got {chain_id!r}")
    if not isinstance(address, str) or not re.fullmatch(r"0x[0-9a-fA-F]{40}", address):
        raise LedgerError(f"address must be 0x and 40 hex digits, got {address!r}")
    return f"{_PREFIX}{chain_id}:{address.lower()}"


def parse_did(did: str) -> tuple[int, str]:
    """(chain id, lowercase address) of a DID; refuses anything not in the canonical form."""
    m = _DID.match(did) if isinstance(did, str) else None
    if m is None:
        raise LedgerError(f"{did!r} is not a DID of the form did:pkh:eip155:<chainId>:<lowercase 0x address>")
    chain_id = int(m.group(1))
    if chain_id >= 2**64:
        raise LedgerError(f"{did!r}: chain id does not fit in 64 bits")
    return chain_id, m.group(2)


def did_order(dids: list[str] | tuple[str, ...]) -> list[str]:
    """DIDs in the block order (their UTF-8 bytes), refusing duplicates and malformed DIDs."""
    for d in dids:
        parse_did(d)
    ordered = sorted(dids, key=lambda d: d.encode("utf-8"))
    for a, b in itertools.pairwise(ordered):
        if a == b:
            raise LedgerError(f"contributor {a} appears twice")
    return ordered
