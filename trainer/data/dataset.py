"""Datasets as committed lists of examples (docs/data.md) and the two bundled workloads' data.

An example is a dict of named tensors (e.g. x and y); its record is
`"EXMP" || u256(index) || H(canonical field list)` where the field list is the STEN records
of its tensors in name order, i.e. the example's own state root; the dataset root is the
list root of the example records. No downloads: digits ship with scikit-learn, the text
corpus is the Python standard library's own source.
"""

from __future__ import annotations

import gzip
import importlib.util
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final

import numpy as np
import torch

from trainer.commit import MerkleTree, leaf_hash, record_leaf, state_root
from trainer.data.keyed import batch_indices

EXAMPLE_TAG: Final = b"EXMP"

Example = dict[str, torch.Tensor]


def example_leaf(index: int, example: Example) -> bytes:
    return record_leaf(EXAMPLE_TAG, [index, state_root(example)])


@dataclass(frozen=True)
class Dataset:
    """A list of examples with the same field names, dtypes and shapes."""

    name: str
    examples: Sequence[Example]

    def __post_init__(self) -> None:
        if not self.examples:
            raise ValueError(f"dataset {self.name!r} has no examples")
        first = self.examples[0]
        for i, ex in enumerate(self.examples):
            if ex.keys() != first.keys() or any(
                ex[k].dtype != first[k].dtype or ex[k].shape != first[k].shape for k in first
            ):
                raise ValueError(f"example {i} of {self.name!r} differs in fields, dtypes or shapes from example 0")

    def __len__(self) -> int:
        return len(self.examples)

    @cached_property
    def tree(self) -> MerkleTree:
        return MerkleTree([example_leaf(i, ex) for i, ex in enumerate(self.examples)])

    @property
    def root(self) -> bytes:
        return self.tree.root

    @classmethod
    def from_tensors(cls, name: str, **fields: torch.Tensor) -> Dataset:
        """Example i holds `fields[k][i]` for each field k: tensors with the same first dimension (the examples).

        `Dataset.from_tensors("mine", x=x_NF, y=y_N)`: each example is a contiguous copy of its row.
        """
        if not fields:
            raise ValueError(f"dataset {name!r}: give at least one field, e.g. from_tensors(name, x=..., y=...)")
        sizes = {}
        for k, v in fields.items():
            if not isinstance(v, torch.Tensor):
                raise ValueError(f"dataset {name!r}: field {k!r} is a {type(v).__name__}, not a tensor")
            if v.dim() == 0:
                raise ValueError(f"dataset {name!r}: field {k!r} is a 0-d tensor; its first dimension counts examples")
            sizes[k] = v.shape[0]
        if len(set(sizes.values())) != 1:
            raise ValueError(f"dataset {name!r}: the fields hold different numbers of examples: {sizes}")
        n = next(iter(sizes.values()))
        return cls(name, [{k: v[i].detach().clone().contiguous() for k, v in fields.items()} for i in range(n)])

    @classmethod
    def from_folder(cls, folder: str | Path, name: str | None = None) -> Dataset:
        """One example per `*.pt` file of `folder` (a `torch.save`d dict of field name -> tensor), in the byte
        order of the file names; `save_folder` writes one. Files are read with `weights_only=True`."""
        root = Path(folder)
        if not root.is_dir():
            raise ValueError(f"dataset folder {str(root)!r} is not a folder")
        files = sorted(root.glob("*.pt"), key=lambda f: f.name.encode())
        if not files:
            raise ValueError(f"dataset folder {str(root)!r} holds no *.pt files (one per example)")
        examples: list[Example] = []
        for f in files:
            try:
                ex = torch.load(f, weights_only=True, map_location="cpu")
            except Exception as e:  # a corrupt or foreign file: name it
                raise ValueError(f"dataset file {str(f)!r} is not a torch.save file of tensors: {e}") from None
            if (
                not isinstance(ex, dict)
                or not ex
                or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in ex.items())
            ):
                raise ValueError(f"dataset file {str(f)!r} must hold a dict of field name -> tensor (one example)")
            examples.append({k: v.contiguous() for k, v in ex.items()})
        return cls(name or root.name, examples)

    def save_folder(self, folder: str | Path) -> None:
        """Write one `<index, 8 digits>.pt` file per example into `folder` (created), readable by `from_folder`."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        for i, ex in enumerate(self.examples):
            torch.save(dict(ex), root / f"{i:08d}.pt")

    def batch(self, seed: int, step: int, batch_size: int) -> Example:
        """The batch of `step`: examples at the keyed indices, stacked along a new first axis."""
        idx = batch_indices(seed, step, batch_size, len(self))
        return {k: torch.stack([self.examples[i][k] for i in idx]) for k in self.examples[0]}


def digits(split: str = "train", test_fraction: float = 0.2) -> Dataset:
    """scikit-learn's bundled 8x8 digits: x float32 [64] in [0, 1], y int64 label.

    The split is fixed: the last `test_fraction` of the examples, in the file's order, is the test set.
    """
    pixels, labels = _digits_table()
    x = torch.tensor(pixels, dtype=torch.float32) / 16.0  # exact: pixel values are 0..16
    y = torch.tensor(labels, dtype=torch.int64)
    cut = round(len(x) * (1 - test_fraction))
    rows = range(cut) if split == "train" else range(cut, len(x)) if split == "test" else None
    if rows is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    return Dataset(f"digits/{split}", [{"x": x[i].clone(), "y": y[i].clone()} for i in rows])


def _digits_table() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits file read as `sklearn.datasets.load_digits` reads it (gzip, then `np.loadtxt` with
    "," between fields: 64 pixel columns and the label), without importing sklearn.datasets, which takes about
    2 s, paid again by every trainer, client and oracle process."""
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the digits dataset is scikit-learn's: pip install scikit-learn")
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, mode="rt", encoding="utf-8") as f:
        data = np.loadtxt(f, delimiter=",")
    return data[:, :-1], data[:, -1].astype(int, copy=False)


STDLIB_FILES: Final = ("collections/__init__.py", "functools.py", "heapq.py", "bisect.py", "textwrap.py", "string.py")


def stdlib_text(files: Sequence[str] = STDLIB_FILES) -> bytes:
    root = Path(sysconfig.get_paths()["stdlib"])
    return b"".join((root / f).read_bytes() for f in files)


def char_sequences(text: bytes, block: int, name: str = "stdlib-chars") -> Dataset:
    """Byte-level language modelling: example i is x = text[i*block : (i+1)*block], y = x shifted by one.

    Tokens are the bytes themselves (vocabulary 256), int64.
    """
    if block <= 0:
        raise ValueError(f"block must be positive, got {block}")
    tokens = torch.tensor(list(text), dtype=torch.int64)
    n = (len(tokens) - 1) // block
    if n <= 0:
        raise ValueError(f"text of {len(text)} bytes is shorter than one block of {block}")
    return Dataset(
        name,
        [
            {"x": tokens[i * block : (i + 1) * block].clone(), "y": tokens[i * block + 1 : (i + 1) * block + 1].clone()}
            for i in range(n)
        ],
    )


__all__ = ["Dataset", "Example", "char_sequences", "digits", "example_leaf", "leaf_hash", "stdlib_text"]
