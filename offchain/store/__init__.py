"""A content-addressed store: agents publish and fetch objects by the commitment they post.

Tensors, states, programs, datasets and blobs, each keyed by its commitment (tensor
commitment, state root, program hash, dataset root, SHA-256); every get recomputes it, so a
corrupt or missing object is a MissingObjectError or CorruptObjectError, never silently
used. `Store` is the typed layer, `Backend` what holds the bytes (`FolderBackend` locally;
S3-compatible or IPFS fit the same protocol). Formats: docs/store.md.
"""

from offchain.store.backend import Backend, FolderBackend
from offchain.store.errors import CorruptObjectError, MissingObjectError, StoreError
from offchain.store.store import BLOB, DATASET, PROGRAM, STATE, TENSOR, Store

__all__ = [
    "BLOB",
    "DATASET",
    "PROGRAM",
    "STATE",
    "TENSOR",
    "Backend",
    "CorruptObjectError",
    "FolderBackend",
    "MissingObjectError",
    "Store",
    "StoreError",
]
