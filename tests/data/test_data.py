from __future__ import annotations

import hashlib

import pytest
import torch

from trainer.commit import verify
from trainer.data.dataset import Dataset, char_sequences, digits, example_leaf
from trainer.data.keyed import batch_indices, uniform_symmetric


def test_batch_index_formula_by_hand() -> None:
    seed, step, n = 12345, 7, 1000
    want = [
        int.from_bytes(
            hashlib.sha256(
                b"BTCH" + seed.to_bytes(32, "big") + step.to_bytes(32, "big") + j.to_bytes(32, "big")
            ).digest(),
            "big",
        )
        % n
        for j in range(4)
    ]
    assert batch_indices(seed, step, 4, n) == want


def test_batches_depend_on_seed_and_step_only() -> None:
    assert batch_indices(1, 2, 64, 1797) == batch_indices(1, 2, 64, 1797)
    assert batch_indices(1, 2, 64, 1797) != batch_indices(1, 3, 64, 1797)
    assert batch_indices(1, 2, 64, 1797) != batch_indices(2, 2, 64, 1797)


@pytest.mark.parametrize(("b", "n"), [(0, 10), (4, 0)])
def test_bad_batch_parameters(b: int, n: int) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        batch_indices(1, 0, b, n)


def test_uniform_init_is_keyed_exact_and_in_range() -> None:
    a = uniform_symmetric(5, "w", (33, 7), 0.25)
    assert a.dtype == torch.float32 and a.shape == (33, 7)
    assert torch.equal(a.view(torch.int32), uniform_symmetric(5, "w", (33, 7), 0.25).view(torch.int32))
    assert not torch.equal(a, uniform_symmetric(5, "v", (33, 7), 0.25))
    assert not torch.equal(a, uniform_symmetric(6, "w", (33, 7), 0.25))
    assert a.abs().max() < 0.25
    # element 0 from the spec, by hand
    block0 = hashlib.sha256(b"INIT" + (5).to_bytes(32, "big") + hashlib.sha256(b"w").digest() + bytes(32)).digest()
    u24 = int.from_bytes(block0[:4], "big") >> 8
    frac = torch.tensor((2 * u24 + 1 - 2**24) / 2**24, dtype=torch.float32)
    assert a.reshape(-1)[0].view(torch.int32) == (frac * torch.tensor(0.25)).view(torch.int32)


def test_digits_dataset_root_and_openings() -> None:
    d = digits()
    assert len(d) == 1438 and len(digits("test")) == 359
    assert d.root == digits().root
    for i in (0, 700, len(d) - 1):
        verify(d.root, len(d), i, example_leaf(i, d.examples[i]), d.tree.open(i).siblings)
    batch = d.batch(seed=3, step=0, batch_size=16)
    assert batch["x"].shape == (16, 64) and batch["y"].dtype == torch.int64


def test_char_sequences_shift_by_one() -> None:
    ds = char_sequences(b"abcdefghij", block=3)
    assert len(ds) == 3
    assert bytes(ds.examples[1]["x"].tolist()) == b"def" and bytes(ds.examples[1]["y"].tolist()) == b"efg"
    with pytest.raises(ValueError, match="shorter than one block"):
        char_sequences(b"ab", block=3)


def test_mismatched_examples_are_refused() -> None:
    with pytest.raises(ValueError, match="differs"):
        Dataset("bad", [{"x": torch.zeros(2)}, {"x": torch.zeros(3)}])
    with pytest.raises(ValueError, match="no examples"):
        Dataset("empty", [])


def test_digits_are_scikit_learns_bit_for_bit_without_importing_sklearn_datasets() -> None:
    """`digits` reads scikit-learn's file itself (importing sklearn.datasets costs each process about 2 s): the
    tensors must hash equal to those built from `sklearn.datasets.load_digits`, for both splits."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target, dtype=torch.int64)
    cut = round(len(x) * 0.8)

    def digest(xs: torch.Tensor, ys: torch.Tensor) -> str:
        return hashlib.sha256(xs.contiguous().numpy().tobytes() + ys.contiguous().numpy().tobytes()).hexdigest()

    for split, rows in (("train", slice(0, cut)), ("test", slice(cut, None))):
        d = digits(split)
        ours = digest(torch.stack([e["x"] for e in d.examples]), torch.stack([e["y"] for e in d.examples]))
        assert ours == digest(x[rows], y[rows]), split
    code = "import sys; from trainer.data.dataset import digits; digits(); print('sklearn.datasets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "False"
